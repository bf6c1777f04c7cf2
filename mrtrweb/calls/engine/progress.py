"""What a server's ``notifications/progress`` do while it works on a call.

Each is announced through :data:`mrtrweb.calls.signals.call_progress` (the live pages listen),
the latest is kept on the call for pages loaded meanwhile, and, during a resubmission, it
tells the delivery watchdog that the server is alive.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import sync_to_async
from django.utils import timezone

from ..models import Call, Round
from ..signals import call_progress
from .transitions import this_attempt, transition

__all__ = ["ANNOUNCE_EVERY", "HEARTBEAT_EVERY", "KEEP_EVERY", "on_progress"]

logger = logging.getLogger(__name__)

OnNotification = Callable[[Any], Awaitable[None]]

# At most one announcement a tenth of a second, per request: faster than a person reads, and a
# server that floods progress (40,000 notifications) would otherwise push every one of them
# to every browser watching, which held the delivery for 39 s instead of 6.
ANNOUNCE_EVERY = 0.1
# How often the latest progress is written to the call, for pages loaded while it works.
KEEP_EVERY = 1.0
# How often a resubmission's progress tells the watchdog the server is alive.
HEARTBEAT_EVERY = 5.0


def _every(seconds: float) -> Callable[[], bool]:
    """True at most once every ``seconds`` (and the first time)."""
    last = [float("-inf")]

    def due() -> bool:
        if time.monotonic() - last[0] < seconds:
            return False
        last[0] = time.monotonic()
        return True

    return due


def on_progress(call: Call, round: Round | None = None) -> OnNotification:
    """The ``on_notification`` callback of one request of a call (``round``: the round whose
    answers it resubmits). What it keeps on the call (and the round's heartbeat) is set on the
    objects too, so they stay the rows as stored (``Exchanged``)."""
    call_id = call.pk
    announce_due, keep_due = _every(ANNOUNCE_EVERY), _every(KEEP_EVERY)
    # Read at each request, so a test can make every notification a heartbeat.
    heartbeat_due = _every(HEARTBEAT_EVERY) if round is not None else None

    async def on_notification(notification: Any) -> None:
        if getattr(notification, "method", None) != "notifications/progress":
            return
        params = notification.params
        now = {
            "progress": float(params.progress),
            "total": float(params.total) if params.total is not None else None,
            "message": params.message if isinstance(params.message, str) else "",
            "at": time.time(),
        }
        if announce_due():
            await _announce(call_id, now)
        if keep_due():
            await sync_to_async(_keep)(call, now)
        if heartbeat_due is not None and round is not None and heartbeat_due():
            await sync_to_async(_heard)(round)

    return on_notification


async def _announce(call_id: int, progress: dict[str, Any]) -> None:
    for receiver, outcome in await call_progress.asend_robust(
        sender=Call, call_id=call_id, **progress
    ):
        if isinstance(outcome, Exception):
            logger.error("receiver %r failed on progress", receiver, exc_info=outcome)


def _keep(call: Call, progress: dict[str, Any]) -> None:
    Call.objects.filter(pk=call.pk).update(progress=progress)
    call.progress = progress


def _heard(round: Round) -> None:
    now = timezone.now()
    if transition(
        round,
        Round.Status.DELIVERING,
        Round.Status.DELIVERING,
        where=this_attempt(round),
        heard_at=now,
    ):
        round.heard_at = now
