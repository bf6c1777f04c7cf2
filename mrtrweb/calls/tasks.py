"""Background entry points. They only call the engine."""

from __future__ import annotations

from django_tasks import task

from . import engine


@task()
def deliver_round(round_id: int) -> None:
    engine.deliver(round_id)
