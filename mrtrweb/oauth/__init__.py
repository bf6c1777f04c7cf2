"""OAuth 2.1 for MCP servers that require authorization (the MCP authorization spec of
2026-07-28), pure Python on httpx and authlib, nothing from Django.

MCP's own rules (discovery, scope choice, client identity order, ``iss`` and ``resource``
checks) are in their own modules; authlib does PKCE, the token requests, client
authentication and refresh. ``headless.HeadlessAuthenticator`` runs it all without a person.

The flow, as an authenticator with a person (the web app) runs it:

1. The MCP server answers 401: ``Challenge.parse(status, www_authenticate)``, then
   ``discover(http, server_url, challenge)`` (refuses a foreign ``resource`` or a lying
   ``issuer``). Keep ``Discovery.to_json()`` with the connection.
2. ``identify(http, discovery, redirect_uri=..., client_name=..., metadata_document_url=...,
   preregistered=..., known=...)``: one ``ClientIdentity`` per issuer (store the secret
   encrypted; ``to_json`` leaves it out).
3. ``authorization_request(discovery, identity, redirect_uri=..., scopes=choose_scopes(...))``:
   send the person to ``.url``; keep the request (``state`` and ``code_verifier`` are secrets)
   with their session.
4. On the callback: ``exchange_code(http, discovery, identity, request, request.GET)`` checks
   ``state`` and ``iss`` first, then returns a ``TokenSet`` (store it encrypted).
5. Later: ``refresh(...)`` before expiry (``TokenSet.expires_within``) or when
   ``on_unauthorized(...)`` says so after a 401; store the rotated refresh token at once.
   ``TokenError.invalid_grant``: the person must connect again. After a 403
   ``insufficient_scope``, ``step_up_scopes(...)`` gives the scopes to authorize again with.
"""

from .authorize import AuthorizationRequest, authorization_request, check_callback, exchange_code
from .challenge import Challenge
from .discovery import Discovery, discover
from .errors import (
    AuthorizationDenied,
    DiscoveryError,
    IssuerMismatch,
    OAuthError,
    ResourceMismatch,
    StateMismatch,
    TokenError,
    Unreachable,
)
from .identity import ClientIdentity, client_metadata_document, identify
from .renewal import Renewal, on_unauthorized, step_up_scopes
from .scopes import choose_scopes
from .tokens import TokenSet, client_credentials, refresh

__all__ = [
    "AuthorizationDenied",
    "AuthorizationRequest",
    "Challenge",
    "ClientIdentity",
    "Discovery",
    "DiscoveryError",
    "IssuerMismatch",
    "OAuthError",
    "Renewal",
    "ResourceMismatch",
    "StateMismatch",
    "TokenError",
    "TokenSet",
    "Unreachable",
    "authorization_request",
    "check_callback",
    "choose_scopes",
    "client_credentials",
    "client_metadata_document",
    "discover",
    "exchange_code",
    "identify",
    "on_unauthorized",
    "refresh",
    "step_up_scopes",
]
