"""The scheduler's poller: what runs it (every ``db_worker``, the in-process worker), and a
tick doing what is due with nothing queued for later."""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from typing import Any

import pytest
from django.core.management import get_commands
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from mrtrweb.calls.models import Call, Round
from mrtrweb.live.worker import InProcessWorker
from mrtrweb.scheduler import poller
from mrtrweb.scheduler.poller import Poller, tick
from tests.support.factories import make_connection, make_user

pytestmark = pytest.mark.django_db(transaction=True)


def _parked(due_in: timedelta) -> Round:
    call = Call.objects.create(
        connection=make_connection(),
        method=Call.Method.TOOL,
        target="parked",
        started_by=make_user(),
        status=Call.Status.WAITING,
    )
    return Round.objects.create(
        call=call, index=1, input_requests={}, expires_at=timezone.now() + due_in
    )


def _until(check: Any, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.02)
    return False


def test_a_tick_does_what_is_due_and_nothing_else(time_machine: Any) -> None:
    round = _parked(timedelta(minutes=10))
    assert tick()["expired"] == 0
    time_machine.move_to(round.expires_at + timedelta(seconds=1))
    done = tick()
    assert done["expired"] == 1 and done["webhooks"] == 0
    assert Round.objects.get(pk=round.pk).status == Round.Status.EXPIRED
    assert tick()["expired"] == 0
    assert not DBTaskResult.objects.exists()  # nothing was queued, before or after


def test_the_poller_ticks_in_a_thread_until_stopped() -> None:
    round = _parked(timedelta(seconds=-1))
    running = Poller(interval=0.05).start()
    try:
        assert running.alive
        assert _until(lambda: Round.objects.get(pk=round.pk).status == Round.Status.EXPIRED)
    finally:
        running.stop()
    assert not running.alive
    assert not any(t.name == poller.THREAD_NAME for t in threading.enumerate())


def test_every_db_worker_runs_it() -> None:
    """``manage.py db_worker`` is the scheduler's: django-tasks-db's worker, the poller beside
    it (tests/faults and tests/scaleout run it as a deployment does)."""
    assert get_commands()["db_worker"] == "mrtrweb.scheduler"


def test_the_in_process_worker_runs_it_beside_the_tasks() -> None:
    round = _parked(timedelta(seconds=-1))
    worker = InProcessWorker(interval=30.0)
    worker.start()
    try:
        assert _until(lambda: Round.objects.get(pk=round.pk).status == Round.Status.EXPIRED)
    finally:
        worker.stop(timeout=10)
    assert not any(t.name == poller.THREAD_NAME for t in threading.enumerate())
