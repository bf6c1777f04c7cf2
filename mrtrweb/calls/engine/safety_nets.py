"""The safety nets of work a process does itself: an answer it delivers at once, a call it
starts sending at once (:mod:`..handoff`).

Should that process die between committing the work and sending it, something else must send
it. A task row written with every answer and every start, due :data:`handoff.GRACE` later,
would be inserted, claimed, run and marked done by a worker, almost always to find the work
done: a tenth of a busy web process's time. So each answer and start makes sure one shared
task runs a step (:data:`STEP`) after its grace, as the watchdogs and the
expiry do a minute's worth; that task finds what is still unsent by then and queues it, one
task each, as the sweep does. An answer or start whose step this process has seen waiting
writes nothing (:mod:`.batching`).

The rows queued by an older version (``deliver_unclaimed_round``, ``send_call``) still run.
"""

from __future__ import annotations

from datetime import datetime

from django.db.models import QuerySet
from django.utils import timezone

from .. import handoff, queue
from ..models import Call, Round
from .batching import schedule_batched

__all__ = [
    "STEP",
    "deliver_unclaimed_due",
    "net_answer",
    "net_start",
    "send_unsent_due",
    "unclaimed_rounds",
    "unsent_calls",
]

# The shared task's step: everything answered or started within five seconds shares a row,
# and what a dead process left is sent 5-10 s after its grace, not a minute later.
STEP = handoff.GRACE


def net_answer(now: datetime) -> None:
    """Make sure an answer taken ``now``, which this process delivers itself, is sent should
    the process die first. In the answer's transaction."""
    schedule_batched("deliver_unclaimed_due", now + handoff.GRACE, step=STEP)


def net_start(now: datetime) -> None:
    """Make sure a call created ``now``, which this process sends itself, is sent should the
    process die first. In the call's transaction."""
    schedule_batched("send_unsent_due", now + handoff.GRACE, step=STEP)


def unclaimed_rounds(before: datetime) -> QuerySet[Round]:
    """Answers taken before ``before`` that nobody has tried to deliver: not on a stream (the
    process holding it answers those), not waiting for an account (its resume sends them)."""
    unclaimed: QuerySet[Round] = Round.objects.filter(
        status=Round.Status.SUBMITTED,
        carrier=Round.Carrier.RETRY,
        attempts=0,
        answered_at__lte=before,
        call__waiting_for_authorization_since__isnull=True,
    )
    return unclaimed


def unsent_calls(before: datetime) -> QuerySet[Call]:
    """Calls created before ``before`` and never sent, not waiting for an account."""
    return Call.objects.filter(
        status=Call.Status.RUNNING,
        sent_at__isnull=True,
        created_at__lte=before,
        waiting_for_authorization_since__isnull=True,
    )


def deliver_unclaimed_due(*, now: datetime | None = None) -> int:
    """Queue the delivery of every answer still unclaimed past its grace: its process died
    before sending it. How many. A second delivery task is harmless: only the one that claims
    the round sends it, and only while nobody has tried (``unclaimed_only``)."""
    before = (now or timezone.now()) - handoff.GRACE
    return queue.enqueue_each("deliver_unclaimed_round", unclaimed_rounds(before))


def send_unsent_due(*, now: datetime | None = None) -> int:
    """Queue the sending of every call still unsent past its grace: its process died before
    sending it. How many. Only the sender that claims the call (``Call.sent_at``) sends it."""
    before = (now or timezone.now()) - handoff.GRACE
    return queue.enqueue_each("send_call", unsent_calls(before))
