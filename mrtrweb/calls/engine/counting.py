"""The round cap: every round a server asks for, on either carrier, is counted here, so the
cap is kept by one guarded update and a call past it fails the same way wherever it was
asked (a 2026-07-28 round in :mod:`.exchange`, a question on a stream in :mod:`.streams`)."""

from __future__ import annotations

from typing import Any

from django.db.models import F
from django.utils import timezone

from ..models import Call
from .trail import record
from .transitions import counted_under_cap, set_call

__all__ = ["count_round"]


def count_round(call: Call, *, own: bool, asks: bool) -> bool:
    """Count a round the server asked for (inside the caller's transaction); False when the
    call must not go on: it finished meanwhile (``own``: the call's own request), or the cap
    of rounds is reached (the call is then failed).

    One guarded update does what three queries did (is it finished? count it, read the count
    back): it counts the round under the cap, restarts the watchdog's clock (each request of
    the call does: ``updated_at``) and, when the round asks a person (``asks``), sets the
    call waiting, for :func:`.parking.park` told so (``waiting=True``). Only when nothing
    matched is the call read, to tell which it was."""
    cap = call.connection.max_rounds
    now = timezone.now()
    fields: dict[str, Any] = {"rounds_used": F("rounds_used") + 1, "updated_at": now}
    if asks:
        fields["status"] = Call.Status.WAITING
    if counted_under_cap(call, cap, unless_finished=own, **fields):
        call.rounds_used += 1
        call.updated_at = now
        if asks:
            call.status = Call.Status.WAITING
        return True
    call.refresh_from_db(fields=["status", "rounds_used"])
    if own and call.status in Call.FINISHED:
        # The watchdog failed the call while its answer was on the way: it stays so.
        record(call, "late_answer_ignored")
        return False
    # One round more than the cap allows: counted, and the call fails.
    Call.objects.filter(pk=call.pk).update(rounds_used=F("rounds_used") + 1, updated_at=now)
    call.rounds_used += 1
    set_call(
        call,
        status=Call.Status.FAILED,
        error=f"The server asked for input more than {cap} times.",
    )
    record(call, "failed", reason="round cap", cap=cap)
    return False
