"""OAuth 2.1 for MCP servers that require authorization (the MCP authorization spec of
2026-07-28), pure Python on httpx and authlib, nothing from Django.

MCP's own rules (discovery, scope choice, client identity order, ``iss`` and ``resource``
checks) are in their own modules; authlib does PKCE, the token requests, client
authentication and refresh. ``headless.HeadlessAuthenticator`` runs it all without a person.
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
