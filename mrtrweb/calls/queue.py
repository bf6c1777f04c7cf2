"""How the engine queues its background work without importing the module that runs it.

``calls/tasks.py`` holds the task entry points, thin functions that call the engine; the engine
in turn must queue some of them (a resubmission, a watchdog, an expiry). Importing each other
would make a circle, so the tasks are registered here when the app is ready
(``CallsConfig.ready``, the way Django wires signal receivers) and the engine asks for them by
name. This module imports neither side.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django_tasks.base import Task
from django_tasks_db import DatabaseBackend

__all__ = ["can_defer", "enqueue", "register", "task"]

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
    """Whether the backend of task ``name`` keeps its tasks for a worker (rather than running
    them at once, as django-tasks' ImmediateBackend in tests): then the process that takes an
    answer may send it itself, and the scheduler sends it should the process die first."""
    return bool(task(name).get_backend().supports_defer)


def enqueue(name: str, *args: Any) -> None:
    """Queue task ``name`` to run now.

    With the database queue the task row is written in the current transaction, so a state
    change and the task that carries it on commit together (no process can die between
    them). Other backends get it after commit.
    """
    job = task(name)
    if isinstance(job.get_backend(), DatabaseBackend):
        job.enqueue(*args)
    else:
        transaction.on_commit(lambda: job.enqueue(*args))
