"""Which scopes to ask for (the MCP spec's scope selection strategy, SEP-2207, SEP-2350)."""

from __future__ import annotations

from collections.abc import Iterable

from .challenge import Challenge
from .discovery import Discovery

__all__ = ["OFFLINE_ACCESS", "choose_scopes", "union"]

OFFLINE_ACCESS = "offline_access"


def union(*groups: Iterable[str]) -> tuple[str, ...]:
    """The scopes of every group, each once, in first-seen order."""
    seen: dict[str, None] = {}
    for group in groups:
        for scope in group:
            seen.setdefault(scope, None)
    return tuple(seen)


def choose_scopes(
    discovery: Discovery, challenge: Challenge | None, previous: tuple[str, ...] = ()
) -> tuple[str, ...]:
    """The scopes of the next authorization request.

    The challenge's ``scope`` when it names one, else the resource's ``scopes_supported``,
    else none (the scope parameter is then left out). On re-authorization the scopes asked
    for before are kept (a step-up adds, it does not trade). ``offline_access`` is added only
    when the authorization server lists it, for a refresh token.
    """
    if challenge is not None and challenge.scope:
        wanted = challenge.scope
    else:
        wanted = discovery.scopes_supported
    # offline_access is this authorization server's to offer: asked again only if it does.
    chosen = union((s for s in previous if s != OFFLINE_ACCESS), wanted)
    if OFFLINE_ACCESS in discovery.server_scopes and chosen and OFFLINE_ACCESS not in chosen:
        chosen = (*chosen, OFFLINE_ACCESS)
    return chosen
