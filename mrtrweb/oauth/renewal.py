"""What to do when the MCP server refuses a token: the decisions, without the doing.

Every authenticator (the headless one here, the web app's database-backed one) asks these
functions, so the rules live in one place:

- a 401: refresh when there is a refresh token, the authorization server is still the one that
  issued it, and the token just refused did not itself come from a refresh made after a 401;
  otherwise authorize again (from a fresh discovery: the server may have moved to another
  authorization server, whose client identity and tokens are its own);
- a 403 ``insufficient_scope``: authorize again for the union of the scopes asked before and
  the ones the challenge names, unless the token already holds all of them (asking again
  cannot help; the MCP client's limit of three step-ups a request stops the rest).
"""

from __future__ import annotations

from typing import Literal

from .challenge import Challenge
from .discovery import Discovery
from .scopes import choose_scopes
from .tokens import TokenSet

__all__ = ["Renewal", "on_unauthorized", "step_up_scopes"]

Renewal = Literal["refresh", "authorize"]


def on_unauthorized(
    tokens: TokenSet | None,
    before: Discovery | None,
    now: Discovery,
    *,
    refreshed_after_401: bool = False,
) -> Renewal:
    """After a 401: ``"refresh"`` or ``"authorize"`` (with ``now``, the fresh discovery).

    ``refreshed_after_401``: the refused token came from a refresh made after an earlier 401;
    refreshing again would go round in circles.
    """
    if (
        tokens is not None
        and tokens.refresh_token
        and before is not None
        and before.issuer == now.issuer
        and not refreshed_after_401
    ):
        return "refresh"
    return "authorize"


def step_up_scopes(
    discovery: Discovery,
    challenge: Challenge,
    *,
    granted: tuple[str, ...],
    previous: tuple[str, ...],
) -> tuple[str, ...] | None:
    """The scopes to re-authorize with after 403 ``insufficient_scope``; ``None`` when the
    token already holds every scope the challenge names."""
    if challenge.scope and set(challenge.scope) <= set(granted):
        return None
    return choose_scopes(discovery, challenge, previous=previous)
