"""What is due on calls and rounds, done: the calls' part of the scheduler's tick.

Nothing is queued for later. Each row holds when it next needs looking at, and the scheduler
(:mod:`mrtrweb.scheduler`, in every worker) runs :func:`run_due` about once a second:

- a parked round past its state lifetime (``Round.expires_at``): expired, or renewed
  (:mod:`.expiry`); its reminders and escalation (``Round.remind_at``, :mod:`.escalation`);
- a question on a stream whose owner stopped beating (``Round.heard_at``): lost
  (:mod:`.streams`);
- a round in flight (``Round.watch_at``, set by every transition into ``submitted`` or
  ``delivering``): an answer its own process did not send within a few seconds (it died), a
  backoff's next attempt, or a queued send that may be lost, queued (``deliver_round``); an
  attempt past its deadline, flagged (:mod:`.watchdogs`);
- a running call (``Call.watch_at``): never sent (its process died), queued
  (``send_call``); sent and past its deadline, failed (:mod:`.watchdogs`).
  What waits for its caller to reconnect an account is left to the resume.

Every look claims its rows the way the rest of the engine does, with a guarded transition, so
any number of schedulers may run at once and each thing is done once. On PostgreSQL each
batch is also locked (``SKIP LOCKED``): two schedulers take different rows rather than racing
for the same, and a scheduler killed mid-batch leaves its rows, rolled back, to the next. A
queued send is only looked at again a lease later (``MRTRWEB_DELIVERY_GRACE``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connections, router, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from .. import queue
from ..models import Call, Round
from .escalation import remind_if_due
from .expiry import EXPIRABLE_OPEN, EXPIRABLE_WAITING, expire_if_due
from .streams import OPEN as STREAM_OPEN
from .streams import grace, lose, orphaned
from .transitions import transition, transition_call
from .watchdogs import check_call, check_delivery

__all__ = ["BATCH", "claim_each", "lease", "remind_due", "run_due"]

logger = logging.getLogger(__name__)

# Rows one look claims at once: a batch is one transaction on PostgreSQL (its locks held
# while it runs), and what is left is the next tick's.
BATCH = 100


def lease() -> timedelta:
    """How long a send the scheduler queued is left to its task before it is queued again (a
    worker killed with it, a queue that was down)."""
    return timedelta(seconds=float(settings.MRTRWEB_DELIVERY_GRACE))


def claim_each(found: QuerySet[Any], do: Callable[[int], int], batch: int = BATCH) -> int:
    """Run ``do(pk)`` for up to ``batch`` rows of ``found``, each in a savepoint of its own
    (one failing leaves the others done); the sum of what they returned."""
    database = connections[router.db_for_write(found.model)]
    if not database.features.has_select_for_update_skip_locked:
        # SQLite: one writer at a time, and each ``do`` claims its row with a guarded update.
        return sum(_one(do, pk) for pk in list(found.values_list("pk", flat=True)[:batch]))
    with transaction.atomic(using=database.alias):
        locked = found.select_for_update(skip_locked=True, of=("self",))
        return sum(_one(do, pk) for pk in list(locked.values_list("pk", flat=True)[:batch]))


def _one(do: Callable[[int], int], pk: int) -> int:
    try:
        with transaction.atomic():
            return int(do(pk))
    except Exception:
        # One row's failure (a bug, a policy that cannot be read) must not stop the rest; it
        # stays due, and is tried again next tick.
        logger.exception("the scheduler's %s(%s) failed", getattr(do, "__name__", do), pk)
        return 0


def _send_round(pk: int, now: datetime) -> int:
    """Queue the delivery of an answered round nobody sent: its lease first (a guarded
    update), so no other scheduler queues it too."""
    attempts = Round.objects.filter(pk=pk).values_list("attempts", flat=True).first()
    if attempts is None or not transition(
        pk,
        Round.Status.SUBMITTED,
        Round.Status.SUBMITTED,
        where={"watch_at__lte": now},
        watch_at=now + lease(),
    ):
        return 0
    # An answer nobody has tried is sent only while nobody has: its own process may be
    # trying it right now, and then its backoff and watchdog decide (engine.resubmit).
    queue.enqueue("deliver_unclaimed_round" if attempts == 0 else "deliver_round", pk)
    return 1


def _send_call(pk: int, now: datetime) -> int:
    """Queue the sending of a call nobody sent: its lease first (a guarded update), so no
    other scheduler queues it too."""
    if not transition_call(
        pk,
        Call.Status.RUNNING,
        Call.Status.RUNNING,
        where={"watch_at__lte": now, "sent_at__isnull": True},
        watch_at=now + lease(),
    ):
        return 0
    queue.enqueue("send_call", pk)
    return 1


def remind_due(now: datetime | None = None, *, batch: int = BATCH) -> int:
    """The reminders and escalations due by ``now``; how many were done."""
    now = now or timezone.now()
    due = Round.objects.order_by().filter(status=Round.Status.PENDING, remind_at__lte=now)
    return claim_each(due, lambda pk: remind_if_due(pk, now=now), batch)


def run_due(now: datetime | None = None, *, batch: int = BATCH) -> dict[str, int]:
    """Do what is due on calls and rounds by ``now`` (up to ``batch`` of each kind); how many
    of each were done. Safe any time, from any number of processes."""
    now = now or timezone.now()
    rounds = Round.objects.order_by()
    # A question on a stream is timed out at its deadline by the process holding the stream
    # (which tells the server "cancel"); the scheduler expires it only a grace later, should
    # that process be gone.
    expired_by = Q(expires_at__lte=now) & (
        Q(carrier=Round.Carrier.RETRY) | Q(expires_at__lte=now - grace())
    )
    in_flight = rounds.filter(carrier=Round.Carrier.RETRY, watch_at__lte=now)
    # A call or round waiting for its caller to reconnect an account is sent by the resume,
    # not before; it is due again once the wait is over.
    running = Call.objects.order_by().filter(
        status=Call.Status.RUNNING,
        watch_at__lte=now,
        waiting_for_authorization_since__isnull=True,
    )
    return {
        "expired": claim_each(
            rounds.filter(EXPIRABLE_OPEN, expired_by),
            lambda pk: expire_if_due(pk, now=now),
            batch,
        )
        + claim_each(
            rounds.filter(EXPIRABLE_WAITING, expired_by),
            lambda pk: expire_if_due(pk, now=now),
            batch,
        ),
        "reminded": remind_due(now, batch=batch),
        "lost": claim_each(
            rounds.filter(orphaned(now), carrier=Round.Carrier.STREAM, status__in=STREAM_OPEN),
            lambda pk: lose(pk, why="its process stopped"),
            batch,
        ),
        "requeued": claim_each(
            in_flight.filter(
                status=Round.Status.SUBMITTED,
                call__waiting_for_authorization_since__isnull=True,
            ),
            lambda pk: _send_round(pk, now),
            batch,
        )
        + claim_each(running.filter(sent_at__isnull=True), lambda pk: _send_call(pk, now), batch),
        "flagged": claim_each(
            in_flight.filter(status=Round.Status.DELIVERING),
            lambda pk: check_delivery(pk, now=now),
            batch,
        ),
        "failed": claim_each(
            running.filter(sent_at__isnull=False),
            lambda pk: check_call(pk, now=now),
            batch,
        ),
    }
