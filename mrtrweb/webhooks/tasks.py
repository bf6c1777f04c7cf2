"""Background entry point: one delivery attempt, and the one way attempts are queued.

``sending`` makes an attempt and says when to try again; queuing the next one is this
module's, so ``sending`` never imports it (no circle between the two).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone
from django_tasks import task

from . import sending


@task()
def send_delivery(delivery_id: int) -> None:
    retry_in = sending.attempt(delivery_id)
    if retry_in is not None:
        transaction.on_commit(lambda: schedule(delivery_id, retry_in))


def schedule(delivery_id: int, delay: float) -> None:
    """Enqueue an attempt to run after ``delay`` seconds.

    A backend that cannot defer (django-tasks' ImmediateBackend, used by tests) runs it at
    once.
    """
    job = send_delivery
    if delay > 0 and job.get_backend().supports_defer:
        job = job.using(run_after=timezone.now() + timedelta(seconds=delay))
    job.enqueue(delivery_id)


def sweep(*, now: Any = None) -> int:
    """Queue again the pending deliveries whose task was lost; returns how many. Safe to run
    any time, from any number of processes: an attempt claims its delivery, so a second task
    for it sends nothing."""
    lost = sending.lost(now=now)
    for delivery_id in lost:
        schedule(delivery_id, 0)
    return len(lost)
