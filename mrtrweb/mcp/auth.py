"""The hook through which a connection's credentials are supplied and renewed.

``mcp`` knows nothing of OAuth: an :class:`Authenticator` gives the headers of every request
and is told when the server refuses them. What it does then (refresh a token, discover, send a
person to an authorization server, step up the scopes) is its own business (``mrtrweb.oauth``
holds one that needs no person; the web app has one backed by the database).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol, runtime_checkable

__all__ = ["MAX_STEP_UPS", "MAX_UNAUTHORIZED_RETRIES", "Authenticator", "is_scope_challenge"]

# Per request: one retry after a 401 (new credentials either work or they do not), and at most
# three step-ups after 403 insufficient_scope (the spec asks for a retry limit; three is the
# suite's and the SDK's).
MAX_UNAUTHORIZED_RETRIES = 1
MAX_STEP_UPS = 3


@runtime_checkable
class Authenticator(Protocol):
    """Supplies the credential headers of a connection and renews them when refused."""

    async def headers(self) -> Mapping[str, str]:
        """The headers to send on this request, e.g. ``{"Authorization": "Bearer ..."}``.

        Called before every request. May be empty (the server's 401 then says how to
        authorize). May raise :class:`~mrtrweb.mcp.AuthorizationRequired` when no credentials
        can be had without a person.
        """
        ...

    async def challenged(self, http_status: int, www_authenticate: str | None) -> bool:
        """The server answered 401, or 403 ``insufficient_scope``, with this challenge.

        Return True once fresh credentials are ready: the client then sends the same request
        again (with a new JSON-RPC id) with fresh :meth:`headers`. Return False to give up;
        the client raises :class:`~mrtrweb.mcp.AuthorizationRequired`.
        """
        ...


def is_scope_challenge(http_status: int, www_authenticate: str | None) -> bool:
    """A 403 whose challenge is ``error="insufficient_scope"`` (RFC 6750 section 3.1)."""
    if http_status != 403 or not www_authenticate:
        return False
    compact = www_authenticate.replace(" ", "").lower()
    return 'error="insufficient_scope"' in compact or "error=insufficient_scope" in compact
