"""The watchdogs: a request whose sender died (or hangs) is found by its deadline.

A claimed attempt (``delivering``) and a sent call hold when the scheduler looks at them
(``watch_at``, :mod:`.due`): first once they could have ended, then at their real deadline,
counted again from the attempt's last progress (:func:`stuck_after`) or the call's last
change (:func:`call_stuck_after`). Both do nothing for a round or call that moved on by then.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from mrtrweb.mcp import OutcomeUnknown
from mrtrweb.servers.models import Connection

from ..models import Call, Round
from .outcomes import fail_call, outcome_unknown
from .transitions import transition, transition_call

__all__ = ["call_stuck_after", "check_call", "check_delivery", "stuck_after"]

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


def check_delivery(
    round_id: int, attempt: int | None = None, *, now: datetime | None = None
) -> bool:
    """If the delivery attempt in flight (``attempt``, or whichever) has not ended by its
    deadline, its sender died (or hangs): the request may have gone out, so its outcome is
    unknown. True when it was found stuck; else the scheduler looks again at the deadline."""
    now = now or timezone.now()
    found = Round.objects.select_related("call__connection").filter(
        pk=round_id,
        status=Round.Status.DELIVERING,
        # A stream round's sender is its owner, watched by its heartbeat (engine.streams).
        carrier=Round.Carrier.RETRY,
    )
    round = (found if attempt is None else found.filter(attempts=attempt)).first()
    if round is None:
        return False
    attempt = round.attempts
    if round.delivering_since is None:
        transition(round, Round.Status.DELIVERING, Round.Status.DELIVERING, watch_at=None)
        return False
    alive = max(round.delivering_since, round.heard_at or round.delivering_since)
    deadline = alive + stuck_after(round.call.connection)
    if now < deadline:
        transition(
            round,
            Round.Status.DELIVERING,
            Round.Status.DELIVERING,
            where={"attempts": attempt},
            watch_at=deadline,
        )
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


def check_call(call_id: int, *, now: datetime | None = None) -> bool:
    """Fail a call still ``running`` past its deadline: the process sending its first request
    died or hangs (the client's own deadlines end every live exchange sooner). True when it
    was found stuck; else the scheduler looks again at the deadline."""
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
        transition_call(call, Call.Status.RUNNING, Call.Status.RUNNING, watch_at=deadline)
        return False
    message = (
        f"The call got no answer by {deadline:%Y-%m-%d %H:%M:%S %Z}: the process sending it "
        "stopped, so the server may or may not have run it. Start it again if it should run."
    )
    stuck = fail_call(call, message, reason=message, stuck=True)
    if stuck:
        logger.warning("call %s: still running past its deadline, failed", call.pk)
    return stuck
