"""An in-memory :class:`mrtrweb.mcp.Authenticator` that needs no person.

For commands and tests: it authorizes by following the authorization server's redirect
itself (an authorization server that approves without a person answers the authorization
request with a redirect to ``redirect_uri`` carrying the code, as the conformance suite's
does), or runs the client credentials grant. The protocol is in the module functions; this
class only keeps the state of one connection in memory and decides when to use which.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from urllib.parse import parse_qsl, urlsplit

import httpx

from mrtrweb.mcp import AuthorizationRequired

from .authorize import authorization_request, exchange_code
from .challenge import Challenge
from .discovery import Discovery, discover
from .errors import AuthorizationDenied, OAuthError, TokenError
from .identity import ClientIdentity, identify
from .renewal import on_unauthorized, step_up_scopes
from .scopes import choose_scopes
from .tokens import TokenSet, client_credentials, refresh

__all__ = ["HeadlessAuthenticator"]

logger = logging.getLogger(__name__)

# Refresh this long before the access token expires, so no request carries a stale one.
REFRESH_MARGIN = 30.0


class HeadlessAuthenticator:
    """Authorizes one MCP server for a program (no person, nothing stored but in memory).

    ``client_credentials=True``: machine to machine with ``preregistered`` (its secret, or
    ``private_key_pem`` for ``private_key_jwt``). Otherwise the authorization code flow,
    with the client identified in the spec's order (``metadata_document_url``,
    ``preregistered``, dynamic registration).
    """

    def __init__(
        self,
        http: httpx.AsyncClient,
        server_url: str,
        *,
        redirect_uri: str,
        client_name: str = "mrtrweb",
        metadata_document_url: str | None = None,
        preregistered: ClientIdentity | None = None,
        client_credentials: bool = False,
        private_key_pem: str | None = None,
        application_type: str = "native",
    ) -> None:
        self.http = http
        self.server_url = server_url
        self.redirect_uri = redirect_uri
        self.client_name = client_name
        self.metadata_document_url = metadata_document_url
        self.preregistered = preregistered
        self.use_client_credentials = client_credentials
        self.private_key_pem = private_key_pem
        self.application_type = application_type
        self.discovery: Discovery | None = None
        self.identity: ClientIdentity | None = None
        self.tokens: TokenSet | None = None
        self.scopes: tuple[str, ...] = ()
        # How many times the authorization server was asked (for limits and tests).
        self.authorizations = 0
        self.refreshes = 0
        # The current access token came from a refresh made after a 401.
        self._refreshed_after_401 = False

    # -- the Authenticator protocol ---------------------------------------------------------

    async def headers(self) -> Mapping[str, str]:
        tokens = self.tokens
        if tokens is None:
            return {}  # the server's 401 says where to authorize
        if tokens.refresh_token and tokens.expires_within(REFRESH_MARGIN):
            try:
                await self._refresh()
            except OAuthError as exc:
                logger.info("refresh before expiry failed, the server will say: %s", exc)
        assert self.tokens is not None
        return {"Authorization": f"Bearer {self.tokens.access_token}"}

    async def challenged(self, http_status: int, www_authenticate: str | None) -> bool:
        challenge = Challenge.parse(http_status, www_authenticate)
        try:
            if challenge.insufficient_scope:
                return await self._step_up(challenge)
            if http_status == 401:
                return await self._unauthorized(challenge)
            return False
        except OAuthError as exc:
            raise AuthorizationRequired(
                f"Authorization failed: {exc}",
                http_status=http_status,
                www_authenticate=www_authenticate,
            ) from exc

    # -- the decisions ----------------------------------------------------------------------

    async def _unauthorized(self, challenge: Challenge) -> bool:
        # Discover again: the server may have moved to another authorization server.
        now = await discover(self.http, self.server_url, challenge)
        decision = on_unauthorized(
            self.tokens, self.discovery, now, refreshed_after_401=self._refreshed_after_401
        )
        self.discovery = now
        if decision == "refresh":
            try:
                await self._refresh()
                self._refreshed_after_401 = True
                return True
            except TokenError as exc:
                logger.info("refresh after a 401 failed, authorizing again: %s", exc)
        self.tokens = None
        # The scopes asked for before (step-ups included) are asked for again.
        scopes = choose_scopes(now, challenge, previous=self.scopes)
        if self.use_client_credentials:
            await self._client_credentials(scopes)
        else:
            await self._authorize(scopes)
        return True

    async def _step_up(self, challenge: Challenge) -> bool:
        if self.discovery is None:
            self.discovery = await discover(self.http, self.server_url, challenge)
        granted = self.tokens.scope if self.tokens is not None else ()
        scopes = step_up_scopes(self.discovery, challenge, granted=granted, previous=self.scopes)
        if scopes is None:
            return False
        if self.use_client_credentials:
            await self._client_credentials(scopes)
        else:
            await self._authorize(scopes)
        return True

    # -- the flows --------------------------------------------------------------------------

    async def _identity(self, discovery: Discovery) -> ClientIdentity:
        self.identity = await identify(
            self.http,
            discovery,
            redirect_uri=self.redirect_uri,
            client_name=self.client_name,
            metadata_document_url=self.metadata_document_url,
            preregistered=self.preregistered,
            known=self.identity,
            application_type=self.application_type,
        )
        return self.identity

    async def _authorize(self, scopes: tuple[str, ...]) -> None:
        assert self.discovery is not None
        discovery = self.discovery
        identity = await self._identity(discovery)
        request = authorization_request(
            discovery, identity, redirect_uri=self.redirect_uri, scopes=scopes
        )
        self.authorizations += 1
        self.scopes = scopes
        params = await self._follow(request.url)
        self.tokens = await exchange_code(self.http, discovery, identity, request, params)
        self._refreshed_after_401 = False

    async def _follow(self, url: str) -> dict[str, str]:
        """GET the authorization URL and read the code from the redirect it answers with."""
        try:
            response = await self.http.get(url, follow_redirects=False)
        except httpx.HTTPError as exc:
            raise AuthorizationDenied(f"Could not reach the authorization endpoint: {exc}") from exc
        location = response.headers.get("location")
        if not response.is_redirect or not location:
            raise AuthorizationDenied(
                f"The authorization server did not approve without a person (HTTP "
                f"{response.status_code}); a headless client cannot go on"
            )
        target = urlsplit(location)
        expected = urlsplit(self.redirect_uri)
        if (target.scheme, target.netloc, target.path) != (
            expected.scheme,
            expected.netloc,
            expected.path,
        ):
            raise AuthorizationDenied(
                "The authorization server redirected somewhere other than the redirect URI"
            )
        return dict(parse_qsl(target.query, keep_blank_values=True))

    async def _refresh(self) -> None:
        assert self.tokens is not None and self.tokens.refresh_token
        assert self.discovery is not None and self.identity is not None
        self.refreshes += 1
        self.tokens = await refresh(
            self.http, self.discovery, self.identity, self.tokens.refresh_token
        )
        self._refreshed_after_401 = False  # the caller says when it was after a 401

    async def _client_credentials(self, scopes: tuple[str, ...]) -> None:
        assert self.discovery is not None
        if self.preregistered is None:
            raise OAuthError("The client credentials grant needs a client ID")
        methods = self.discovery.auth_methods
        method = (
            "private_key_jwt"
            if self.private_key_pem and "private_key_jwt" in methods
            else self.preregistered.token_endpoint_auth_method
        )
        if method not in methods:
            method = next(
                (m for m in ("client_secret_basic", "client_secret_post") if m in methods), method
            )
        self.identity = ClientIdentity(
            issuer=self.discovery.issuer,
            client_id=self.preregistered.client_id,
            client_secret=self.preregistered.client_secret,
            token_endpoint_auth_method=method,
            registered_via="client-credentials",
        )
        self.authorizations += 1
        self.scopes = scopes
        self.tokens = await client_credentials(
            self.http,
            self.discovery,
            self.identity,
            scopes=scopes,
            private_key_pem=self.private_key_pem,
        )
        self._refreshed_after_401 = False
