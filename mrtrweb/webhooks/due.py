"""What is due on webhook deliveries, done: the webhooks' part of the scheduler's tick.

A pending delivery's ``next_attempt_at`` is when it is due: a moment after it was created
(the process that created it queues it at once; should that task be lost, the scheduler
queues it then), a retry's backoff, or, while an attempt is in flight, the attempt's end
(should its worker die, it is due again then; receivers drop the rare duplicate by
``X-Mrtr-Delivery``, which never changes). :func:`send_due` queues each due delivery once,
under a lease (its ``next_attempt_at`` moved on), with the calls' claims
(``engine.claim_each``: ``SKIP LOCKED`` on PostgreSQL).
"""

from __future__ import annotations

from datetime import datetime

from django.utils import timezone

from mrtrweb.calls import engine

from .models import Delivery
from .sending import LEASE
from .tasks import schedule

__all__ = ["send_due"]


def _send(pk: int, now: datetime) -> int:
    if not Delivery.objects.filter(
        pk=pk, status=Delivery.Status.PENDING, next_attempt_at__lte=now
    ).update(next_attempt_at=now + LEASE):
        return 0
    schedule(pk)
    return 1


def send_due(now: datetime | None = None, *, batch: int = engine.BATCH) -> int:
    """Queue every pending delivery due by ``now`` (up to ``batch``); how many."""
    now = now or timezone.now()
    due = Delivery.objects.order_by().filter(
        status=Delivery.Status.PENDING, next_attempt_at__lte=now
    )
    return engine.claim_each(due, lambda pk: _send(pk, now), batch)
