"""How the engine queues its background work without importing the module that runs it.

``calls/tasks.py`` holds the task entry points, thin functions that call the engine; the engine
in turn must queue some of them (a resubmission, a watchdog, an expiry). Importing each other
would make a circle, so the tasks are registered here when the app is ready
(``CallsConfig.ready``, the way Django wires signal receivers) and the engine asks for them by
name. This module imports neither side.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from django_tasks.base import Task
from django_tasks_db import DatabaseBackend

__all__ = ["can_defer", "enqueue", "enqueue_each", "register", "task"]

_tasks: dict[str, Task[Any, Any]] = {}


def register(*tasks: Task[Any, Any]) -> None:
    """Make ``tasks`` available to :func:`enqueue` under their function names."""
    for one in tasks:
        _tasks[one.name] = one


def task(name: str) -> Task[Any, Any]:
    try:
        return _tasks[name]
    except KeyError:
        raise LookupError(
            f"no task {name!r} registered: CallsConfig.ready registers calls.tasks"
        ) from None


def can_defer(name: str) -> bool:
    """Whether the backend of task ``name`` can hold it until a time (``run_after``)."""
    return bool(task(name).get_backend().supports_defer)


def enqueue(name: str, *args: Any, at: datetime | None = None, deferred_only: bool = False) -> None:
    """Queue task ``name``, at ``at`` or now.

    With the database queue the task row is written in the current transaction, so a state
    change and the task that carries it on commit together (no process can die between
    them). Other backends get it after commit; ``deferred_only`` tasks (watchdogs, expiry)
    are skipped by a backend that cannot wait, since running them now would do nothing.
    """
    job = task(name)
    backend = job.get_backend()
    if at is not None and not backend.supports_defer:
        if deferred_only:
            return
        at = None
    if at is not None:
        job = job.using(run_after=at)
    if isinstance(backend, DatabaseBackend):
        job.enqueue(*args)
    else:
        transaction.on_commit(lambda: job.enqueue(*args))


def enqueue_each(name: str, found: QuerySet[Any]) -> int:
    """Queue task ``name`` for each row of the queryset ``found``, each in a transaction of
    its own (with the database queue, its task row); how many."""
    count = 0
    for pk in found.values_list("pk", flat=True):
        with transaction.atomic():
            enqueue(name, pk)
        count += 1
    return count
