"""The authorization code flow with PKCE: the request that sends a person to the authorization
server, and the callback that comes back (state, RFC 9207 ``iss``, then the code)."""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx
from authlib.common.security import generate_token
from authlib.oauth2.rfc6749.parameters import prepare_grant_uri
from authlib.oauth2.rfc7636 import create_s256_code_challenge

from .discovery import Discovery
from .errors import AuthorizationDenied, DiscoveryError, IssuerMismatch, OAuthError, StateMismatch
from .identity import ClientIdentity
from .tokens import TokenSet, request_token

__all__ = ["AuthorizationRequest", "authorization_request", "check_callback", "exchange_code"]


@dataclass(frozen=True)
class AuthorizationRequest:
    """One authorization request: ``url`` is where the person goes; the rest (``state`` and
    ``code_verifier`` are secrets) stays with their session until the callback."""

    url: str = field(repr=False)  # it carries the state
    state: str = field(repr=False)
    code_verifier: str = field(repr=False)
    redirect_uri: str
    scopes: tuple[str, ...]
    issuer: str

    def to_json(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "state": self.state,
            "code_verifier": self.code_verifier,
            "redirect_uri": self.redirect_uri,
            "scopes": list(self.scopes),
            "issuer": self.issuer,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AuthorizationRequest:
        return cls(
            url=data["url"],
            state=data["state"],
            code_verifier=data["code_verifier"],
            redirect_uri=data["redirect_uri"],
            scopes=tuple(data.get("scopes") or ()),
            issuer=data["issuer"],
        )


def authorization_request(
    discovery: Discovery,
    identity: ClientIdentity,
    *,
    redirect_uri: str,
    scopes: tuple[str, ...],
) -> AuthorizationRequest:
    """Build the authorization URL: PKCE S256, a fresh ``state``, ``resource`` as published.

    Refuses an authorization server whose metadata does not list S256 among
    ``code_challenge_methods_supported`` (absent means no PKCE: the MCP spec says refuse).
    """
    endpoint = discovery.authorization_endpoint
    if endpoint is None:
        raise DiscoveryError(
            f"The authorization server {discovery.issuer} has no authorization endpoint"
        )
    methods = discovery.server_metadata.get("code_challenge_methods_supported")
    if not isinstance(methods, list) or "S256" not in methods:
        raise DiscoveryError(
            f"The authorization server {discovery.issuer} does not offer PKCE with S256; "
            "authorizing without it would expose the code"
        )
    if identity.issuer != discovery.issuer:
        raise OAuthError(
            f"The client identity belongs to {identity.issuer}, not to {discovery.issuer}"
        )
    state = generate_token(43)
    verifier = generate_token(64)  # RFC 7636: 43 to 128 unreserved characters
    url = prepare_grant_uri(
        endpoint,
        client_id=identity.client_id,
        response_type="code",
        redirect_uri=redirect_uri,
        scope=" ".join(scopes) if scopes else None,
        state=state,
        code_challenge=create_s256_code_challenge(verifier),
        code_challenge_method="S256",
        resource=discovery.resource,
    )
    return AuthorizationRequest(
        url=url,
        state=state,
        code_verifier=verifier,
        redirect_uri=redirect_uri,
        scopes=tuple(scopes),
        issuer=discovery.issuer,
    )


def check_callback(
    discovery: Discovery, request: AuthorizationRequest, callback_params: Mapping[str, str]
) -> str:
    """Validate an authorization response and return its code.

    In this order: ``state`` (else :class:`StateMismatch`), ``iss`` (RFC 9207: compared as
    exact strings with the recorded issuer whenever present, required when the server
    advertises ``authorization_response_iss_parameter_supported``; else
    :class:`IssuerMismatch`), then an ``error`` (:class:`AuthorizationDenied`), then the code.
    """
    state = callback_params.get("state")
    if not isinstance(state, str) or not hmac.compare_digest(
        state.encode(), request.state.encode()
    ):
        raise StateMismatch(
            "The authorization response does not belong to this authorization request "
            "(its state differs): refused"
        )
    iss = callback_params.get("iss")
    if iss is not None:
        if iss != request.issuer or iss != discovery.issuer:
            raise IssuerMismatch(
                f"The authorization response comes from issuer {iss!r}, not from "
                f"{request.issuer!r} (RFC 9207): refused, it may be a mix-up attack"
            )
    elif discovery.server_metadata.get("authorization_response_iss_parameter_supported") is True:
        raise IssuerMismatch(
            f"{request.issuer} promises an iss parameter in its authorization responses "
            "(RFC 9207) but this one has none: refused"
        )
    error = callback_params.get("error")
    if error:
        description = callback_params.get("error_description") or ""
        raise AuthorizationDenied(
            f"The authorization server answered {error}"
            + (f": {description}" if description else ""),
            error=error,
        )
    code = callback_params.get("code")
    if not code:
        raise OAuthError("The authorization response carries no code")
    return code


async def exchange_code(
    http: httpx.AsyncClient,
    discovery: Discovery,
    identity: ClientIdentity,
    request: AuthorizationRequest,
    callback_params: Mapping[str, str],
) -> TokenSet:
    """Check the callback (:func:`check_callback`) and trade its code for tokens."""
    code = check_callback(discovery, request, callback_params)
    return await request_token(
        http,
        discovery,
        identity,
        "authorization_code",
        requested=request.scopes,
        code=code,
        redirect_uri=request.redirect_uri,
        code_verifier=request.code_verifier,
    )
