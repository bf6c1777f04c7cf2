"""Background entry points (django-tasks): the work a worker does now. They only call the
engine, which never imports them: ``CallsConfig.ready`` registers them with :mod:`.queue`,
through which the engine queues them by name.

Nothing is queued for later: rows hold their due times, and the scheduler
(:mod:`mrtrweb.scheduler`, in every worker) does what is due, queuing these when a delivery
or a send is due.

Their names are stored as task paths in queued rows (``mrtrweb.calls.tasks.deliver_round``),
so they stay as they are even where the engine's verbs changed: a task queued before an
upgrade still runs after it. The names of the tasks that did later work before the scheduler
did (expiry, reminders, watchdogs, safety nets, the sweep) all point at :func:`run_due_now`,
which does what is due on every row, theirs included.
"""

from __future__ import annotations

from typing import Any

from django_tasks import task

from . import engine


@task()
def deliver_round(round_id: int) -> None:
    engine.resubmit(round_id)


@task()
def deliver_unclaimed_round(round_id: int) -> None:
    """An answer its own process was to send at once, found unsent by the scheduler: sends
    it only if nobody has tried yet (engine.answer)."""
    engine.resubmit(round_id, unclaimed_only=True)


@task()
def send_call(call_id: int) -> None:
    """Send a call, once: a worker's (``MRTRWEB_DELIVER_ON_ANSWER`` off), or one found unsent
    by the scheduler; it sends nothing if somebody has (engine.send_call)."""
    engine.send_call(call_id)


@task()
def renew_round(round_id: int) -> None:
    """The renewal policy: a round whose state died unanswered, its call issued again and the
    round moved onto the fresh state (claimed by its expiry)."""
    engine.renew(round_id)


@task()
def run_due_now(*queued_with: Any) -> dict[str, int]:
    """One tick of the scheduler's calls part, for a row queued under a name below before an
    upgrade (whatever it was queued with: the tick does every row due)."""
    return engine.run_due()


# The names later work was queued under before the scheduler (rows may still wait).
deliver_unclaimed_due = send_unsent_due = expire_round = expire_rounds_due = run_due_now
remind_rounds_due = watch_delivery = watch_deliveries_due = watch_call = run_due_now
watch_calls_due = watch_stream = sweep_rounds = run_due_now

# What the engine and the scheduler queue (by these names, through .queue).
QUEUED_BY_THE_ENGINE = (deliver_round, deliver_unclaimed_round, send_call, renew_round)
