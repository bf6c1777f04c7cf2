"""Whether a call's page shows something on its way, and when that page reloads itself
without JavaScript (through ``live:next``) so the person sees the round or result arrive."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.http import HttpRequest
from django.utils import timezone

from ..models import Call, Round
from . import watching

__all__ = ["in_flight", "reload_after"]


def in_flight(call: Call, rounds: list[Round]) -> bool:
    return watching.in_flight((call.status, tuple((r.pk, r.status) for r in rounds)))


# How often the call page reloads itself without JavaScript while something is on its way:
# soon after the call was started or answered, when a quick server's round or result is due
# within a second or two; less often after that, so a long call costs little.
REFRESH_SOON = 1
REFRESH_LATER = 3
REFRESH_SOON_FOR = timedelta(seconds=10)


def _refresh_after(call: Call, rounds: list[Round]) -> int:
    """Seconds until the page without JavaScript reloads itself (see REFRESH_SOON)."""
    moved = max([call.updated_at, *(r.answered_at for r in rounds if r.answered_at)])
    return REFRESH_SOON if timezone.now() - moved < REFRESH_SOON_FOR else REFRESH_LATER


def reload_after(
    request: HttpRequest, call: Call, rounds: list[Round], context: dict[str, Any]
) -> int | None:
    """Seconds after which the page reloads itself without JavaScript (through ``live:next``),
    or None: while something is on its way; and for a few seconds after a round that waits
    for this person was parked, which may have happened while this page was on its way (a
    start's page answered before the server asked): without it the page would stay put and
    the person would have to find the round's button."""
    if context["in_flight"]:
        return _refresh_after(call, rounds)
    pending = context["pending"]
    if (
        context["may_answer"]
        and pending is not None
        and timezone.now() - pending.created_at < REFRESH_SOON_FOR
    ):
        return REFRESH_SOON
    return None
