"""The watchdogs: a request whose sender died (or hangs) is found by its deadline.

Each claimed resubmission makes sure ``watch_deliveries_due`` runs after the connection's
connect timeout, answer deadline and ``MRTRWEB_DELIVERY_GRACE`` (counted again from the
attempt's last progress); each first request makes sure ``watch_calls_due`` runs after its own
deadline. Both are one task per step of deadlines (``MRTRWEB_EXPIRY_STEP``, a minute) shared
by every delivery or call due by then, rather than one task row each (a call's was a fifth of
what a parked round stored; a delivery's, one more ``INSERT`` in the claim of every answer).
Both do nothing for a round or call that moved on by then.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from mrtrweb.mcp import OutcomeUnknown
from mrtrweb.servers.models import Connection

from ..models import Call, Round
from .batching import schedule_batched
from .outcomes import fail_call, outcome_unknown

__all__ = [
    "call_stuck_after",
    "check_call",
    "check_calls_due",
    "check_deliveries_due",
    "check_delivery",
    "stuck_after",
    "watch_call",
]

logger = logging.getLogger(__name__)


def _grace() -> float:
    return float(settings.MRTRWEB_DELIVERY_GRACE)


def stuck_after(connection: Connection) -> timedelta:
    """How long a delivery may go unheard (no progress) before its sender is presumed dead:
    the client's answer deadline ends every live exchange by then."""
    return timedelta(seconds=connection.connect_timeout + connection.answer_deadline + _grace())


def call_stuck_after(connection: Connection) -> timedelta:
    """How long one request of a call may take before its sender is presumed dead: nothing
    notes a call's progress, so the longest progress may extend the answer deadline to."""
    longest = max(connection.answer_deadline, connection.answer_deadline_max)
    return timedelta(seconds=connection.connect_timeout + longest + _grace())


def watch_delivery(at: datetime) -> None:
    """Make sure the deliveries' watchdog looks at the attempts in flight once one is overdue
    at ``at`` (at most a step later: a task row shared by every delivery due within the
    step)."""
    schedule_batched("watch_deliveries_due", at)


def watch_call(call: Call) -> None:
    """Make sure the calls' watchdog looks at ``call`` once its first request is overdue
    (at most a step later: a task row shared by every call due within the step)."""
    schedule_batched("watch_calls_due", timezone.now() + call_stuck_after(call.connection))


def check_delivery(round_id: int, attempt: int, *, now: datetime | None = None) -> bool:
    """If delivery attempt ``attempt`` of a round has not ended by its deadline, its sender
    died (or hangs): the request may have gone out, so its outcome is unknown. True when it
    was found stuck."""
    now = now or timezone.now()
    round = (
        Round.objects.select_related("call__connection")
        .filter(
            pk=round_id,
            status=Round.Status.DELIVERING,
            attempts=attempt,
            # A stream round's sender is its owner, watched by its heartbeat (engine.streams).
            carrier=Round.Carrier.RETRY,
        )
        .first()
    )
    if round is None or round.delivering_since is None:
        return False
    alive = max(round.delivering_since, round.heard_at or round.delivering_since)
    deadline = alive + stuck_after(round.call.connection)
    if now < deadline:
        with transaction.atomic():
            watch_delivery(deadline)
        return False
    outcome_unknown(
        round.call,
        round,
        OutcomeUnknown(
            f"Delivery attempt {attempt} did not finish by {deadline:%Y-%m-%d %H:%M:%S %Z}: "
            "the process sending it stopped, so the server may or may not have received it."
        ),
    )
    return True


def check_deliveries_due(*, now: datetime | None = None) -> int:
    """Flag every delivery whose sender died (:func:`check_delivery`), and have the watchdog
    look again at those not due yet. How many it flagged."""
    now = now or timezone.now()
    # A stream round's sender is its owner, watched by its heartbeat (engine.streams).
    delivering = Round.objects.filter(status=Round.Status.DELIVERING, carrier=Round.Carrier.RETRY)
    return sum(
        check_delivery(round_id, attempt, now=now)
        for round_id, attempt in delivering.values_list("pk", "attempts")
    )


def check_call(call_id: int, *, now: datetime | None = None) -> bool:
    """Fail a call still ``running`` past its deadline: the process sending its first request
    died or hangs (the client's own deadlines end every live exchange sooner). True when it
    was found stuck."""
    now = now or timezone.now()
    call = (
        Call.objects.select_related("connection")
        .filter(pk=call_id, status=Call.Status.RUNNING)
        .first()
    )
    if call is None or call.waiting_for_authorization_since is not None:
        # Unsent, waiting for an account (engine.outcomes.wait_for_authorization): no sender
        # can have died with it.
        return False
    deadline = call.updated_at + call_stuck_after(call.connection)
    if now < deadline:
        with transaction.atomic():
            schedule_batched("watch_calls_due", deadline)
        return False
    message = (
        f"The call got no answer by {deadline:%Y-%m-%d %H:%M:%S %Z}: the process sending it "
        "stopped, so the server may or may not have run it. Start it again if it should run."
    )
    stuck = fail_call(call, message, reason=message, stuck=True)
    if stuck:
        logger.warning("call %s: still running past its deadline, failed", call.pk)
    return stuck


def check_calls_due(*, now: datetime | None = None) -> int:
    """Fail every call still ``running`` past its deadline (:func:`check_call`), and have the
    watchdog look again at those not due yet. How many it failed."""
    now = now or timezone.now()
    running = Call.objects.filter(status=Call.Status.RUNNING, sent_at__isnull=False)
    return sum(check_call(call_id, now=now) for call_id in running.values_list("pk", flat=True))
