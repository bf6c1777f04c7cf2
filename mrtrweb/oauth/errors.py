"""What can go wrong while authorizing, each a refusal a caller can name to a person."""

from __future__ import annotations

__all__ = [
    "AuthorizationDenied",
    "DiscoveryError",
    "IssuerMismatch",
    "OAuthError",
    "ResourceMismatch",
    "StateMismatch",
    "TokenError",
    "Unreachable",
]


class OAuthError(Exception):
    """Base of every error raised by :mod:`mrtrweb.oauth`."""


class DiscoveryError(OAuthError):
    """The protected resource or authorization server metadata is missing or unusable, or the
    authorization server offers nothing this client can use (no PKCE S256, no way to identify
    the client)."""


class IssuerMismatch(OAuthError):
    """An issuer differs from the one recorded (metadata ``issuer``, or the RFC 9207 ``iss``
    of an authorization response, or ``iss`` missing although the server promised it).
    Compared as exact strings: a mix-up attack hides in what normalisation forgives."""


class ResourceMismatch(OAuthError):
    """The protected resource metadata speaks for another resource than the server's URL."""


class StateMismatch(OAuthError):
    """The authorization response carries another ``state`` than the request: it belongs to
    another session, or is replayed or forged."""


class AuthorizationDenied(OAuthError):
    """The authorization server answered the authorization request with an error (for
    example the person declined), or did not approve without a person."""

    def __init__(self, message: str, *, error: str | None = None) -> None:
        super().__init__(message)
        self.error = error


class TokenError(OAuthError):
    """The token endpoint refused (``error`` is its OAuth error code) or answered garbage.

    ``invalid_grant`` is True when the grant itself is dead (a revoked or expired refresh
    token, a used code): only a new authorization helps.
    """

    def __init__(
        self,
        message: str,
        *,
        error: str | None = None,
        description: str | None = None,
        http_status: int | None = None,
    ) -> None:
        super().__init__(message)
        self.error = error
        self.description = description
        self.http_status = http_status

    @property
    def invalid_grant(self) -> bool:
        return self.error == "invalid_grant"


class Unreachable(OAuthError):
    """An authorization server or metadata document could not be reached (refused
    connection, timeout, broken answer)."""
