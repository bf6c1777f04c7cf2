"""fastmcp's in-memory OAuth authorization server, extended for the OAuth peer.

``InMemoryOAuthProvider`` (fastmcp 4.1) already serves RFC 8414 metadata, dynamic client
registration, the authorization code grant with PKCE (S256), refresh tokens with rotation
and revocation. This subclass adds what a test of a *client* needs from its peer:

- every authorization is a **grant** with a serial number and a **subject** (the person who
  approved). fastmcp's SDK binds ``requestState`` to the token's (client, issuer, subject),
  so a resubmission carried by somebody else's token is refused by the server itself;
- tokens carry the subject, the ``resource`` (RFC 8707) and their lifetimes are configurable
  (``access_ttl``; the module constants of fastmcp's provider are fixed at one hour);
- an access token that expires leaves its refresh token working (fastmcp's provider drops
  both, so nobody could refresh after an expiry) and expiry is checked to the sub-second;
- a request without ``scope`` is granted the client's registered scopes (a real AS grants
  defaults; fastmcp's provider would grant none, and every call would then be 403);
- the ``resource`` of an authorization request must be this server's (``invalid_target``);
- client ID metadata documents (``client_id`` is an URL the AS fetches, draft-ietf-oauth-
  client-id-metadata-document) when ``cimd`` is on; fastmcp has them only in its OAuthProxy,
  whose SSRF guard refuses loopback, so they are fetched here with plain httpx;
- every code, token and client secret it issues carries ``SECRET_MARK`` ("sekret"), which
  the suite's guard looks for in every page and log record;
- a history of every token issued (kept after rotation, revocation and expiry) so the peer's
  call log can say which grant each bearer token belonged to, and test controls that revoke
  every refresh token or expire every access token at once.
"""

from __future__ import annotations

import contextvars
import secrets
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import httpx
from fastmcp.server.auth.auth import ClientRegistrationOptions, RevocationOptions
from fastmcp.server.auth.providers.in_memory import InMemoryOAuthProvider
from mcp.server.auth.handlers.metadata import MetadataHandler
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.routes import build_metadata, cors_middleware
from mcp.shared.auth import (
    InvalidRedirectUriError,
    OAuthClientInformationFull,
    OAuthMetadata,
    OAuthToken,
)
from pydantic import AnyUrl
from starlette.routing import Route

AUTH_CODE_TTL = 300.0
# Every secret this AS issues carries the suite's mark (tests/support/secret_guard.py), so a
# page or log record that shows one fails the test that made it.
SECRET_MARK = "sekret"

# Who is approving the authorization request being handled: set by the peer's /authorize
# front (login_hint, the forced subject, or the browser's session cookie at the AS).
APPROVING_SUBJECT: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "approving_subject", default=None
)

TokenKind = Literal["access", "refresh"]
LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "[::1]", "::1"}
CLIENT_CREDENTIALS = "client_credentials"


@dataclass
class Grant:
    """One authorization: a person approved a client once at /authorize."""

    serial: int
    subject: str
    client_id: str
    scopes: list[str]
    resource: str | None
    redirect_uri: str
    created: float = field(default_factory=time.time)
    refreshes: int = 0


@dataclass
class IssuedToken:
    """A token this AS issued; kept after it stops working, for the call log."""

    token: str
    kind: TokenKind
    grant: int
    subject: str
    client_id: str
    issued: float
    expires_at: float | None
    # active until rotated (a refresh replaced it), revoked (RFC 7009 or the test control)
    ended: str | None = None

    def status(self, now: float | None = None) -> str:
        if self.ended is not None:
            return self.ended
        if self.expires_at is not None and self.expires_at <= (now or time.time()):
            return "expired"
        return "active"

    def public(self) -> dict[str, Any]:
        return {**asdict(self), "status": self.status()}


class PreregisteredClient(OAuthClientInformationFull):
    """A client an operator registered by hand: any loopback redirect URI is its own (the app
    under test listens on a port chosen at run time)."""

    def validate_redirect_uri(self, redirect_uri: AnyUrl | None) -> AnyUrl:
        if redirect_uri is None or redirect_uri.host not in LOOPBACK_HOSTS:
            raise InvalidRedirectUriError(f"Redirect URI '{redirect_uri}' not registered")
        return redirect_uri


class PeerOAuthProvider(InMemoryOAuthProvider):
    def __init__(
        self,
        *,
        base_url: str,
        resource_url: str,
        scopes: list[str],
        access_ttl: float,
        refresh_ttl: float | None,
        dcr: bool = True,
        cimd: bool = False,
    ) -> None:
        super().__init__(
            base_url=base_url,
            client_registration_options=ClientRegistrationOptions(
                enabled=dcr, valid_scopes=scopes, default_scopes=scopes
            ),
            revocation_options=RevocationOptions(enabled=True),
            required_scopes=scopes,
        )
        self.resource_url = resource_url
        self.scopes = scopes
        self.access_ttl = access_ttl
        self.refresh_ttl = refresh_ttl
        self.dcr = dcr
        self.cimd = cimd
        self.grants: dict[int, Grant] = {}
        self.issued: dict[str, IssuedToken] = {}
        self.code_grants: dict[str, int] = {}
        self.cimd_fetches: list[dict[str, Any]] = []
        # The subject /authorize approves when nothing else names one (set by /_test/subject).
        self.forced_subject: str | None = None
        self._subjects = 0

    # -- metadata -----------------------------------------------------------------------------

    def metadata(self) -> OAuthMetadata:
        """fastmcp's RFC 8414 document, plus what this AS does beyond the SDK's defaults."""
        assert self.base_url is not None
        metadata = build_metadata(
            self.base_url,
            None,
            self.client_registration_options or ClientRegistrationOptions(),
            self.revocation_options or RevocationOptions(),
        )
        metadata.issuer = self.issuer_url
        metadata.authorization_response_iss_parameter_supported = True
        # The SDK's client authenticator accepts public clients too; the SDK omits "none".
        metadata.token_endpoint_auth_methods_supported = [
            "client_secret_basic",
            "client_secret_post",
            "none",
        ]
        if self.cimd:
            metadata.client_id_metadata_document_supported = True
        if any(isinstance(c, PreregisteredClient) for c in self.clients.values()):
            metadata.grant_types_supported = [
                *(metadata.grant_types_supported or []),
                CLIENT_CREDENTIALS,
            ]
        return metadata

    def get_routes(self, mcp_path: str | None = None) -> list[Route]:
        routes = super().get_routes(mcp_path)
        handler = cors_middleware(MetadataHandler(self.metadata()).handle, ["GET", "OPTIONS"])
        return [
            Route(route.path, endpoint=handler, methods=["GET", "OPTIONS"])
            if isinstance(route, Route) and route.path == "/.well-known/oauth-authorization-server"
            else route
            for route in routes
        ]

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        if client_info.client_secret is not None:
            # The SDK's handler answers with this same object: the client gets the marked one.
            client_info.client_secret = f"cs_{SECRET_MARK}_{secrets.token_hex(24)}"
        await super().register_client(client_info)

    # -- pre-registered clients ---------------------------------------------------------------

    def preregister(self, client_id: str, secret: str, auth_method: str) -> None:
        """A confidential client entered by hand; it may also use client credentials."""
        self.clients[client_id] = PreregisteredClient(
            client_id=client_id,
            client_secret=secret,
            token_endpoint_auth_method=auth_method,
            grant_types=["authorization_code", "refresh_token", CLIENT_CREDENTIALS],
            response_types=["code"],
            scope=" ".join(self.scopes),
            client_name=f"pre-registered {client_id}",
        )

    def client_credentials(
        self, client: OAuthClientInformationFull, scopes: list[str] | None, resource: str | None
    ) -> OAuthToken:
        """RFC 6749 §4.4 (the SDK's token handler has no such grant): the client is the
        subject, a grant per request, and no refresh token."""
        if CLIENT_CREDENTIALS not in client.grant_types:
            raise TokenError("unauthorized_client", "client_credentials is not allowed")
        allowed = (client.scope or "").split()
        granted = scopes if scopes else allowed
        if not set(granted) <= set(allowed):
            raise TokenError("invalid_scope", "Requested scopes exceed the client's.")
        assert client.client_id is not None
        serial = len(self.grants) + 1
        self.grants[serial] = Grant(
            serial=serial,
            subject=f"client:{client.client_id}",
            client_id=client.client_id,
            scopes=granted,
            resource=resource,
            redirect_uri="",
        )
        token = self._mint(serial, granted)
        # Client credentials get no refresh token (RFC 6749 §4.4.3).
        assert token.refresh_token is not None
        self.refresh_tokens.pop(token.refresh_token, None)
        self._refresh_to_access_map.pop(token.refresh_token, None)
        self._access_to_refresh_map.pop(token.access_token, None)
        del self.issued[token.refresh_token]
        return token.model_copy(update={"refresh_token": None})

    # -- subjects -----------------------------------------------------------------------------

    def new_subject(self) -> str:
        self._subjects += 1
        return f"user-{self._subjects}"

    # -- clients ------------------------------------------------------------------------------

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        known = self.clients.get(client_id)
        if known is not None or not self.cimd or not client_id.startswith(("http://", "https://")):
            return known
        client = await self._fetch_metadata_document(client_id)
        if client is not None:
            self.clients[client_id] = client
        return client

    async def _fetch_metadata_document(self, url: str) -> OAuthClientInformationFull | None:
        """A client ID metadata document: the document's ``client_id`` must be its own URL."""
        record: dict[str, Any] = {"url": url, "time": time.time()}
        self.cimd_fetches.append(record)
        try:
            async with httpx.AsyncClient(timeout=5.0, follow_redirects=False) as client:
                response = await client.get(url, headers={"Accept": "application/json"})
            record["status"] = response.status_code
            document = response.json() if response.status_code == 200 else None
        except (httpx.HTTPError, ValueError) as exc:
            record["error"] = type(exc).__name__
            return None
        if not isinstance(document, dict) or document.get("client_id") != url:
            record["error"] = "client_id does not match the document's URL"
            return None
        method = document.get("token_endpoint_auth_method", "none")
        if method != "none":
            # Shared secrets cannot be published in a document (the draft forbids them).
            record["error"] = f"token_endpoint_auth_method {method!r} is not allowed"
            return None
        try:
            client = OAuthClientInformationFull.model_validate(
                {
                    "client_id": url,
                    "redirect_uris": document.get("redirect_uris"),
                    "client_name": document.get("client_name"),
                    "grant_types": document.get(
                        "grant_types", ["authorization_code", "refresh_token"]
                    ),
                    "response_types": ["code"],
                    "token_endpoint_auth_method": "none",
                    "scope": document.get("scope") or " ".join(self.scopes),
                }
            )
        except ValueError as exc:
            record["error"] = f"invalid document: {exc}"
            return None
        record["accepted"] = True
        return client

    # -- authorization ------------------------------------------------------------------------

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        """Approve at once (no person at a consent page) and send the browser straight back
        with ``code``, ``state`` and ``iss`` (RFC 9207)."""
        if params.resource is not None and params.resource != self.resource_url:
            raise AuthorizeError("invalid_target", f"unknown resource {params.resource!r}")
        assert client.client_id is not None
        scopes = list(params.scopes) if params.scopes else (client.scope or "").split()
        subject = APPROVING_SUBJECT.get() or self.forced_subject or self.new_subject()
        serial = len(self.grants) + 1
        self.grants[serial] = Grant(
            serial=serial,
            subject=subject,
            client_id=client.client_id,
            scopes=scopes,
            resource=params.resource,
            redirect_uri=str(params.redirect_uri),
        )
        code = f"code_{SECRET_MARK}_{secrets.token_urlsafe(24)}"
        self.auth_codes[code] = AuthorizationCode(
            code=code,
            client_id=client.client_id,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            scopes=scopes,
            expires_at=time.time() + AUTH_CODE_TTL,
            code_challenge=params.code_challenge,
            resource=params.resource,
            subject=subject,
        )
        self.code_grants[code] = serial
        return construct_redirect_uri(
            str(params.redirect_uri), code=code, state=params.state, iss=self.issuer
        )

    @property
    def issuer(self) -> str:
        # Exactly the ``issuer`` of the metadata document (RFC 9207 compares them as strings).
        return str(self.issuer_url)

    # -- tokens -------------------------------------------------------------------------------

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        if self.auth_codes.pop(authorization_code.code, None) is None:
            raise TokenError("invalid_grant", "Authorization code not found or already used.")
        serial = self.code_grants.pop(authorization_code.code)
        return self._mint(serial, authorization_code.scopes)

    async def exchange_refresh_token(
        self,
        client: OAuthClientInformationFull,
        refresh_token: RefreshToken,
        scopes: list[str],
    ) -> OAuthToken:
        if not set(scopes) <= set(refresh_token.scopes):
            raise TokenError("invalid_scope", "Requested scopes exceed the refresh token's.")
        record = self.issued[refresh_token.token]
        # Rotation: the old refresh token (and the access token issued with it) stop working.
        self._revoke_internal(refresh_token_str=refresh_token.token)
        self._end(refresh_token.token, "rotated")
        self.grants[record.grant].refreshes += 1
        return self._mint(record.grant, scopes)

    def _mint(self, serial: int, scopes: list[str]) -> OAuthToken:
        grant = self.grants[serial]
        now = time.time()
        access = f"at_{serial}_{SECRET_MARK}_{secrets.token_urlsafe(24)}"
        refresh = f"rt_{serial}_{SECRET_MARK}_{secrets.token_urlsafe(24)}"
        access_expires = now + self.access_ttl
        refresh_expires = None if self.refresh_ttl is None else now + self.refresh_ttl
        common = {"client_id": grant.client_id, "scopes": scopes, "subject": grant.subject}
        self.access_tokens[access] = AccessToken(
            token=access,
            expires_at=int(access_expires),
            resource=grant.resource or self.resource_url,
            claims={"iss": self.issuer, "sub": grant.subject, "grant": serial},
            **common,
        )
        self.refresh_tokens[refresh] = RefreshToken(
            token=refresh,
            expires_at=None if refresh_expires is None else int(refresh_expires),
            resource=grant.resource,
            **common,
        )
        self._access_to_refresh_map[access] = refresh
        self._refresh_to_access_map[refresh] = access
        for token, kind, expires in (
            (access, "access", access_expires),
            (refresh, "refresh", refresh_expires),
        ):
            self.issued[token] = IssuedToken(
                token=token,
                kind=kind,  # type: ignore[arg-type]
                grant=serial,
                subject=grant.subject,
                client_id=grant.client_id,
                issued=now,
                expires_at=expires,
            )
        return OAuthToken(
            access_token=access,
            token_type="Bearer",
            expires_in=max(1, round(self.access_ttl)),
            refresh_token=refresh,
            scope=" ".join(scopes),
        )

    async def load_access_token(self, token: str) -> AccessToken | None:  # type: ignore[override]
        found = self.access_tokens.get(token)
        record = self.issued.get(token)
        if found is None or record is None:
            return None
        if record.status() != "active":
            # Forget the access token alone. fastmcp's provider drops its refresh token too,
            # so a client could never refresh once its access token had expired.
            del self.access_tokens[token]
            paired = self._access_to_refresh_map.pop(token, None)
            if paired is not None:
                self._refresh_to_access_map.pop(paired, None)
            return None
        return found

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        await super().revoke_token(token)
        self._end(token.token, "revoked")

    # -- test controls ------------------------------------------------------------------------

    def _end(self, token: str, why: str) -> None:
        record = self.issued.get(token)
        if record is not None and record.ended is None:
            record.ended = why

    def revoke_refresh_tokens(self, subject: str | None = None, access: bool = False) -> int:
        """Revoke every refresh token (of ``subject``); with ``access`` their access tokens too."""
        revoked = 0
        for token in list(self.refresh_tokens):
            record = self.issued[token]
            if subject is not None and record.subject != subject:
                continue
            paired = self._refresh_to_access_map.get(token)
            del self.refresh_tokens[token]
            self._end(token, "revoked")
            revoked += 1
            if access and paired is not None:
                self.access_tokens.pop(paired, None)
                self._end(paired, "revoked")
        return revoked

    def expire_access_tokens(self, subject: str | None = None) -> int:
        """Make every current access token (of ``subject``) expired now."""
        expired = 0
        now = time.time()
        for token in list(self.access_tokens):
            record = self.issued[token]
            if subject is not None and record.subject != subject:
                continue
            record.expires_at = now - 1
            expired += 1
        return expired

    def token_record(self, token: str) -> IssuedToken | None:
        return self.issued.get(token)
