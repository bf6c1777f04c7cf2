"""Background work batched in time: one task row per step of deadlines
(``MRTRWEB_EXPIRY_STEP``, a minute), shared by everything due within it, rather than one per
round or call (the expiry, the reminders, the calls' watchdog)."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.utils import timezone
from django_tasks.base import TaskResultStatus
from django_tasks_db import DatabaseBackend
from django_tasks_db.models import DBTaskResult

from mrtrweb.db.prepared import Prepared

from .. import queue

__all__ = ["expiry_bucket", "schedule_batched"]


def expiry_bucket(expires_at: datetime) -> datetime:
    """When the expiry task for a deadline of ``expires_at`` runs: the next whole step
    (``MRTRWEB_EXPIRY_STEP`` seconds) at or after it."""
    step = float(settings.MRTRWEB_EXPIRY_STEP)
    if step <= 0:
        return expires_at
    return datetime.fromtimestamp(math.ceil(expires_at.timestamp() / step) * step, tz=UTC)


def schedule_batched(name: str, due_at: datetime) -> None:
    """Make sure task ``name`` (one that does everything due by the time it runs) runs at or
    soon after ``due_at``, sharing a task row per step as :func:`.expiry.schedule_expiry` says. The
    reminders and the calls' watchdog use it too."""
    at = expiry_bucket(due_at)
    step = timedelta(seconds=float(settings.MRTRWEB_EXPIRY_STEP))
    task = queue.task(name)
    if (
        at - timezone.now() > step
        and isinstance(task.get_backend(), DatabaseBackend)
        and _WAITING.exists(task.priority, at, task.module_path)
    ):
        return
    queue.enqueue(name, at=at, deferred_only=True)


# A task row of this step already waiting (mrtrweb.db.prepared: compiled once).
_WAITING = Prepared(
    lambda priority, at, path: DBTaskResult.objects.filter(
        status=TaskResultStatus.READY, priority=priority, run_after=at, task_path=path
    ),
    int,
    datetime,
    str,
)
