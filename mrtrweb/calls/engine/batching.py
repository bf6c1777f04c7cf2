"""Background work batched in time: one task row per step of deadlines
(``MRTRWEB_EXPIRY_STEP``, a minute, unless the caller names a step of its own), shared by
everything due within it, rather than one per round or call (the expiry, the reminders, the
watchdogs, the safety nets of work a process does itself).

A process remembers the rows it wrote (:data:`_waiting`) and reads nothing of the task
backend's tables: another process writes its own row for a step, at most one each, and the
later of them finds nothing left to do."""

from __future__ import annotations

import math
import threading
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import router, transaction
from django.utils import timezone
from django_tasks_db import DatabaseBackend
from django_tasks_db.models import DBTaskResult

from .. import queue

__all__ = ["expiry_bucket", "forget_waiting", "schedule_batched"]


def _step(step: timedelta | None) -> float:
    return float(settings.MRTRWEB_EXPIRY_STEP) if step is None else step.total_seconds()


def expiry_bucket(expires_at: datetime, step: timedelta | None = None) -> datetime:
    """When the expiry task for a deadline of ``expires_at`` runs: the next whole step
    (``step``, or ``MRTRWEB_EXPIRY_STEP`` seconds) at or after it."""
    seconds = _step(step)
    if seconds <= 0:
        return expires_at
    return datetime.fromtimestamp(math.ceil(expires_at.timestamp() / seconds) * seconds, tz=UTC)


def schedule_batched(name: str, due_at: datetime, *, step: timedelta | None = None) -> None:
    """Make sure task ``name`` (one that does everything due by the time it runs) runs at or
    soon after ``due_at``, sharing a task row per step (``step``, or
    ``MRTRWEB_EXPIRY_STEP``) as :func:`.expiry.schedule_expiry` says. The reminders, the
    watchdogs and the safety nets use it too."""
    at = expiry_bucket(due_at, step)
    span = timedelta(seconds=_step(step))
    task = queue.task(name)
    now = timezone.now()
    # A step about to come is not shared: its row may be running already, past what is
    # added now.
    if at - now > span and isinstance(task.get_backend(), DatabaseBackend):
        key = (task.module_path, task.priority, at)
        if key in _waiting:
            return
        queue.enqueue(name, at=at, deferred_only=True)
        _remember(key, now + span)
        return
    queue.enqueue(name, at=at, deferred_only=True)


# The steps whose task row this process wrote, once committed: (task path, priority, step).
# A row is not run before its step, so until the step is a step away its row is there. Only a
# row deleted by hand is missed: what it would have done is then done by the sweep
# (docs/deployment.md), as for a queue that was down.
_waiting: dict[tuple[str, int, datetime], None] = {}
_waiting_lock = threading.Lock()
# Some hundred steps are ever ahead at once (a day of minutes is 1,440): this bounds it.
MAX_WAITING = 512


def _remember(key: tuple[str, int, datetime], soon: datetime) -> None:
    def keep() -> None:
        with _waiting_lock:
            if len(_waiting) >= MAX_WAITING:
                for gone in [k for k in _waiting if k[2] <= soon]:
                    del _waiting[gone]
                if len(_waiting) >= MAX_WAITING:
                    _waiting.clear()
            _waiting[key] = None

    # Not before its row is committed: a transaction rolled back wrote none.
    transaction.on_commit(keep, using=router.db_for_write(DBTaskResult))


def forget_waiting() -> None:
    """Forget the rows written: for a database emptied under this process (tests)."""
    with _waiting_lock:
        _waiting.clear()
