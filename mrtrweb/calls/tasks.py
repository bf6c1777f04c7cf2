"""Background entry points (django-tasks). They only call the engine.

``deliver_round`` sends answers; ``watch_delivery`` (a round's attempt) and ``watch_call`` (a
call's first request) are enqueued to run at a deadline (``run_after``) and do nothing if the
round or call moved on by then; ``expire_rounds_due`` runs when
parked rounds' state lifetimes end: :func:`schedule_expiry` enqueues one per minute of
deadlines (not one per round: a task row per parked round was a third of its storage), and it
expires every open round due by then. ``sweep_rounds`` is the safety net behind them (also
``manage.py expire_rounds``).
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.utils import timezone
from django_tasks import task

from . import engine


@task()
def deliver_round(round_id: int) -> None:
    engine.deliver(round_id)


@task()
def deliver_unclaimed_round(round_id: int) -> None:
    """The safety net of an answer its own process sends at once: sends it only if that
    process died before trying (engine.submit_answers)."""
    engine.deliver(round_id, unclaimed_only=True)


@task()
def send_call(call_id: int) -> None:
    """The safety net of a call its own process starts sending at once: sends it only if
    nobody has yet (engine.start_call)."""
    engine.send_call(call_id)


@task()
def expire_round(round_id: int) -> None:
    """One round's expiry: what the engine enqueued before expire_rounds_due (kept so such
    tasks still queued run)."""
    engine.expire_if_due(round_id)


@task()
def expire_rounds_due() -> int:
    """Expire every open round whose state lifetime is over (and tell its assignees)."""
    return engine.sweep(only_expire=True)["expired"]


@task()
def watch_delivery(round_id: int, attempt: int) -> None:
    engine.check_delivery(round_id, attempt)


@task()
def watch_call(call_id: int) -> None:
    engine.check_call(call_id)


@task()
def sweep_rounds() -> dict[str, int]:
    return engine.sweep()


def expiry_bucket(expires_at: datetime) -> datetime:
    """When the expiry task for a deadline of ``expires_at`` runs: the next whole step
    (``MRTRWEB_EXPIRY_STEP`` seconds, 60 by default) at or after it."""
    step = float(getattr(settings, "MRTRWEB_EXPIRY_STEP", 60.0))
    if step <= 0:
        return expires_at
    return datetime.fromtimestamp(math.ceil(expires_at.timestamp() / step) * step, tz=UTC)


def schedule_expiry(expires_at: datetime) -> None:
    """Make sure an ``expire_rounds_due`` task runs at or soon after ``expires_at``.

    Call it inside the transaction that parks the round. With the database queue, a task
    already waiting for the same step serves (one row per step, however many rounds park);
    two processes racing both enqueue one, which is harmless (expiring is idempotent). A
    step due within the next one is not shared: its task could already be running, and miss
    a round whose transaction has not committed yet.
    """
    at = expiry_bucket(expires_at)
    step = timedelta(seconds=float(getattr(settings, "MRTRWEB_EXPIRY_STEP", 60.0)))
    backend = expire_rounds_due.get_backend()
    if at - timezone.now() > step and _is_database(backend):
        from django_tasks.base import TaskResultStatus
        from django_tasks_db.models import DBTaskResult

        waiting = DBTaskResult.objects.filter(
            status=TaskResultStatus.READY,
            priority=expire_rounds_due.priority,
            run_after=at,
            task_path=expire_rounds_due.module_path,
        )
        if waiting.exists():
            return
    engine._enqueue("expire_rounds_due", at=at, deferred_only=True)


def _is_database(backend: object) -> bool:
    from django_tasks_db import DatabaseBackend

    return isinstance(backend, DatabaseBackend)
