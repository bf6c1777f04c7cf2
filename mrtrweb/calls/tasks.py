"""Background entry points (django-tasks). They only call the engine.

``deliver_round`` sends answers; ``expire_round`` and ``watch_delivery`` are enqueued to run at
a deadline (``run_after``) and do nothing if the round moved on by then; ``sweep_rounds`` is
the safety net behind them (also ``manage.py expire_rounds``).
"""

from __future__ import annotations

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
def expire_round(round_id: int) -> None:
    engine.expire_if_due(round_id)


@task()
def watch_delivery(round_id: int, attempt: int) -> None:
    engine.check_delivery(round_id, attempt)


@task()
def sweep_rounds() -> dict[str, int]:
    return engine.sweep()
