"""Token requests (authorization code, refresh, client credentials) on authlib's client parts.

authlib builds the requests and authenticates the client (``client_secret_basic``,
``client_secret_post``, ``none``, ``private_key_jwt``); the requests go out on the caller's
``httpx.AsyncClient``, so the caller decides pooling, timeouts and test transports. Every
request carries the RFC 8707 ``resource`` exactly as the protected resource published it.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import httpx
from authlib.oauth2.auth import ClientAuth
from authlib.oauth2.rfc6749.parameters import prepare_token_request
from authlib.oauth2.rfc7523 import PrivateKeyJWT
from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, rsa
from cryptography.hazmat.primitives.serialization import load_pem_private_key
from joserfc.jwk import ECKey, OKPKey, RSAKey

from .discovery import Discovery
from .errors import DiscoveryError, TokenError
from .fetch import post_form
from .identity import ClientIdentity

__all__ = ["TokenSet", "client_credentials", "refresh", "request_token"]


@dataclass(frozen=True)
class TokenSet:
    # The tokens stay out of repr(): a TokenSet in a log line or an error shows no secret.
    access_token: str = field(repr=False)
    token_type: str
    refresh_token: str | None = field(repr=False)
    expires_at: float | None  # seconds since the epoch
    scope: tuple[str, ...]

    def expires_within(self, seconds: float, now: float | None = None) -> bool:
        if self.expires_at is None:
            return False
        return self.expires_at - (time.time() if now is None else now) <= seconds

    def to_json(self) -> dict[str, Any]:
        return {
            "access_token": self.access_token,
            "token_type": self.token_type,
            "refresh_token": self.refresh_token,
            "expires_at": self.expires_at,
            "scope": list(self.scope),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TokenSet:
        return cls(
            access_token=data["access_token"],
            token_type=data.get("token_type") or "Bearer",
            refresh_token=data.get("refresh_token"),
            expires_at=data.get("expires_at"),
            scope=tuple(data.get("scope") or ()),
        )

    @classmethod
    def from_response(
        cls,
        body: Mapping[str, Any],
        *,
        requested: tuple[str, ...] = (),
        previous_refresh_token: str | None = None,
        now: float | None = None,
    ) -> TokenSet:
        """A token endpoint's success answer (RFC 6749 section 5.1).

        Without ``scope`` the granted scopes are the requested ones (section 5.1); without a
        new ``refresh_token`` a refresh keeps the one it used (section 6).
        """
        access_token = body.get("access_token")
        token_type = body.get("token_type")
        if not isinstance(access_token, str) or not access_token:
            raise TokenError("The token endpoint answered without an access_token")
        if not isinstance(token_type, str) or token_type.lower() != "bearer":
            raise TokenError(
                f"The token endpoint issued a {token_type!r} token; only Bearer is used"
            )
        expires_in = body.get("expires_in")
        if isinstance(expires_in, str) and expires_in.isdigit():
            expires_in = int(expires_in)
        expires_at = None
        if isinstance(expires_in, int | float) and not isinstance(expires_in, bool):
            expires_at = (time.time() if now is None else now) + float(expires_in)
        scope = body.get("scope")
        refresh_token = body.get("refresh_token")
        return cls(
            access_token=access_token,
            token_type="Bearer",
            refresh_token=refresh_token
            if isinstance(refresh_token, str) and refresh_token
            else previous_refresh_token,
            expires_at=expires_at,
            scope=tuple(scope.split()) if isinstance(scope, str) else requested,
        )


def _private_key(pem: str) -> RSAKey | ECKey | OKPKey:
    loaded = load_pem_private_key(pem.encode(), password=None)
    if isinstance(loaded, rsa.RSAPrivateKey):
        return RSAKey.import_key(pem)
    if isinstance(loaded, ec.EllipticCurvePrivateKey):
        return ECKey.import_key(pem)
    if isinstance(loaded, ed25519.Ed25519PrivateKey | ed448.Ed448PrivateKey):
        return OKPKey.import_key(pem)
    raise TokenError("The private key is neither RSA, EC nor Ed25519/Ed448")


def _signing_alg(discovery: Discovery, key: RSAKey | ECKey | OKPKey) -> str:
    offered = discovery.server_metadata.get("token_endpoint_auth_signing_alg_values_supported")
    by_key = {
        RSAKey: ("RS256", "PS256", "RS384", "RS512"),
        ECKey: ("ES256", "ES384", "ES512"),
        OKPKey: ("EdDSA", "Ed25519"),
    }[type(key)]
    if isinstance(offered, list):
        for alg in offered:
            if isinstance(alg, str) and alg in by_key:
                return alg
    return by_key[0]


def _client_auth(
    discovery: Discovery, identity: ClientIdentity, private_key_pem: str | None
) -> ClientAuth:
    method = identity.token_endpoint_auth_method
    if method == "private_key_jwt":
        if not private_key_pem:
            raise TokenError("private_key_jwt needs the client's private key")
        key = _private_key(private_key_pem)
        # The assertion's audience is the authorization server's issuer identifier
        # (RFC 7523bis, SEP-1046), not the token endpoint URL authlib would put there.
        jwt = PrivateKeyJWT(claims={"aud": discovery.issuer}, alg=_signing_alg(discovery, key))
        return ClientAuth(identity.client_id, key, jwt)
    if method not in ClientAuth.DEFAULT_AUTH_METHODS:
        raise TokenError(f"Unsupported token endpoint authentication method {method!r}")
    if method == "client_secret_basic":
        return ClientAuth(identity.client_id, identity.client_secret or "", _secret_basic)
    return ClientAuth(identity.client_id, identity.client_secret or "", method)


def _secret_basic(
    client: ClientAuth, method: str, uri: str, headers: dict[str, str], body: str
) -> tuple[str, dict[str, str], str]:
    """HTTP Basic with the id and secret form-encoded first (RFC 6749 section 2.3.1), which
    authlib leaves out: an id or secret holding ":" or "%" would otherwise be misread."""
    text = f"{quote(client.client_id, safe='')}:{quote(client.client_secret, safe='')}"
    headers["Authorization"] = "Basic " + base64.b64encode(text.encode()).decode("ascii")
    return uri, headers, body


async def request_token(
    http: httpx.AsyncClient,
    discovery: Discovery,
    identity: ClientIdentity,
    grant_type: str,
    *,
    requested: tuple[str, ...] = (),
    previous_refresh_token: str | None = None,
    private_key_pem: str | None = None,
    **params: Any,
) -> TokenSet:
    """POST one token request and read its answer; ``params`` are the grant's parameters
    (``None`` values are left out)."""
    endpoint = discovery.token_endpoint
    if endpoint is None:
        raise DiscoveryError(f"The authorization server {discovery.issuer} has no token endpoint")
    fields = {k: v for k, v in params.items() if v is not None}
    body = prepare_token_request(grant_type, resource=discovery.resource, **fields)
    auth = _client_auth(discovery, identity, private_key_pem)
    _, headers, body = auth.prepare("POST", endpoint, {}, body)
    answer = await post_form(http, endpoint, body, headers)
    payload = answer.body or {}
    if answer.http_status != 200 or "error" in payload:
        error = payload.get("error") if isinstance(payload.get("error"), str) else None
        description = payload.get("error_description")
        description = description if isinstance(description, str) else None
        raise TokenError(
            f"The token endpoint of {discovery.issuer} refused the {grant_type} request "
            f"(HTTP {answer.http_status}"
            + (f", {error}" if error else "")
            + (f": {description}" if description else "")
            + ")",
            error=error,
            description=description,
            http_status=answer.http_status,
        )
    return TokenSet.from_response(
        payload, requested=requested, previous_refresh_token=previous_refresh_token
    )


async def refresh(
    http: httpx.AsyncClient,
    discovery: Discovery,
    identity: ClientIdentity,
    refresh_token: str,
    scopes: tuple[str, ...] = (),
) -> TokenSet:
    """Use a refresh token (RFC 6749 section 6). The answer's new refresh token, when the
    server rotates them, replaces the old one; store it before using the access token.
    ``TokenError.invalid_grant`` means the refresh token is dead: authorize again."""
    return await request_token(
        http,
        discovery,
        identity,
        "refresh_token",
        requested=scopes,
        previous_refresh_token=refresh_token,
        refresh_token=refresh_token,
        scope=" ".join(scopes) if scopes else None,
    )


async def client_credentials(
    http: httpx.AsyncClient,
    discovery: Discovery,
    identity: ClientIdentity,
    *,
    scopes: tuple[str, ...] = (),
    private_key_pem: str | None = None,
) -> TokenSet:
    """The client credentials grant (OAuth 2.1 section 4.2, the MCP extension SEP-1046):
    machine to machine, authenticated by secret or by a signed JWT (``private_key_jwt``)."""
    return await request_token(
        http,
        discovery,
        identity,
        "client_credentials",
        requested=scopes,
        private_key_pem=private_key_pem,
        scope=" ".join(scopes) if scopes else None,
    )
