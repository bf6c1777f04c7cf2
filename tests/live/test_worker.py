"""The embedded default's task worker: django-tasks-db's Worker in a thread of the web process."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from channels.db import database_sync_to_async
from django.utils import timezone
from django_tasks import TaskResultStatus
from django_tasks_db.models import DBTaskResult

from mrtrweb.calls import engine
from mrtrweb.live import worker as live_worker
from mrtrweb.live.worker import InProcessWorker

from .conftest import frames_until, kinds_of, start_deploy
from .tasks import where_am_i
from .test_cross_process import database_url

pytestmark = pytest.mark.django_db(transaction=True)

REPO_ROOT = Path(__file__).resolve().parents[2]
THREAD = "mrtrweb-inprocess-worker"


def wait_until_done(result_id: Any, within: float) -> tuple[float, DBTaskResult]:
    started = time.monotonic()
    while time.monotonic() - started < within:
        row = DBTaskResult.objects.get(pk=result_id)
        if row.status in (TaskResultStatus.SUCCESSFUL, TaskResultStatus.FAILED):
            return time.monotonic() - started, row
        time.sleep(0.01)
    raise AssertionError(f"task {result_id} not run within {within}s")


@pytest.fixture
def running_worker() -> Any:
    started: list[InProcessWorker] = []

    def start(interval: float) -> InProcessWorker:
        worker = InProcessWorker(interval=interval)
        worker.start()
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.stop(timeout=10)


def test_a_task_enqueued_in_this_process_runs_at_once(running_worker: Any) -> None:
    # Polling only every 30 s: only being woken explains a prompt run.
    running_worker(interval=30)
    time.sleep(0.2)  # the thread's first look at the (empty) queue is over
    result = where_am_i.enqueue("here")
    took, row = wait_until_done(result.id, within=5)
    assert row.status == TaskResultStatus.SUCCESSFUL
    assert row.return_value == f"here ran in {THREAD}"
    assert took < 2.0, f"the woken worker took {took:.2f}s"


def test_a_task_due_later_does_not_wake_the_worker(running_worker: Any) -> None:
    worker = running_worker(interval=30)
    time.sleep(0.2)  # the thread's first look at the (empty) queue is over
    later = timezone.now() + timedelta(minutes=5)
    where_am_i.using(run_after=later).enqueue("later")
    assert not worker._wake.is_set()  # nothing to run: the regular look will find it
    took, _ = wait_until_done(where_am_i.enqueue("now").id, within=5)
    assert took < 2.0, f"the woken worker took {took:.2f}s"


def test_a_task_enqueued_by_another_process_is_found_by_polling(running_worker: Any) -> None:
    running_worker(interval=0.2)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")}
    env.update(DJANGO_SETTINGS_MODULE="mrtrweb.settings", DATABASE_URL=database_url())
    done = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "shell",
            "-c",
            "from tests.live.tasks import where_am_i; print(where_am_i.enqueue('there').id)",
        ],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    _, row = wait_until_done(done.stdout.strip().splitlines()[-1], within=5)
    assert row.status == TaskResultStatus.SUCCESSFUL
    assert row.return_value == f"there ran in {THREAD}"


def test_a_stopped_worker_runs_nothing_more(running_worker: Any) -> None:
    worker = running_worker(interval=0.1)
    worker.stop(timeout=10)
    assert not worker.alive
    result = where_am_i.enqueue("later")
    time.sleep(0.5)
    assert DBTaskResult.objects.get(pk=result.id).status == TaskResultStatus.READY


def test_the_setting_decides_and_only_serving_starts_it(settings: Any) -> None:
    settings.MRTRWEB_INPROCESS_WORKER = False
    assert live_worker.start_inprocess_worker() is None
    # Importing the ASGI app (as manage.py, migrations and tests do) starts nothing.
    import mrtrweb.asgi  # noqa: F401

    settings.MRTRWEB_INPROCESS_WORKER = True
    assert live_worker._worker is None


@pytest.mark.usefixtures("layer")
async def test_the_web_process_delivers_answers_and_its_sockets_hear_it(
    connect: Any, people: dict[str, Any], fastmcp_peer: Any, settings: Any
) -> None:
    """The embedded topology in one process: the ASGI app serves a socket, which starts the
    worker; an answer is queued as a durable task, run by the worker thread, and the events it
    raises there cross into the server's loop to reach the socket."""
    settings.MRTRWEB_INPROCESS_WORKER = True
    settings.MRTRWEB_INPROCESS_WORKER_INTERVAL = 30.0
    caller = people["caller"]

    call = await start_deploy(fastmcp_peer, caller)
    socket = await connect(caller, f"/ws/calls/{call.pk}/?view=call")
    assert live_worker._worker is not None and live_worker._worker.alive

    answered_at = time.monotonic()
    await database_sync_to_async(engine.answer)(
        await database_sync_to_async(call.rounds.get)(),
        {
            "approval": {
                "action": "accept",
                "content": {"approve": True, "replicas": 2, "window": "now"},
            }
        },
        caller,
    )
    frames = await frames_until(socket, "completed")
    took = time.monotonic() - answered_at
    assert kinds_of(frames) == ["answered", "delivered", "completed"]
    assert took < 5.0, f"delivery took {took:.2f}s"
    # The worker marks the task done just after the events it raised went out.
    fetch = database_sync_to_async(
        lambda: DBTaskResult.objects.get(task_path="mrtrweb.calls.tasks.deliver_round")
    )
    task = await fetch()
    deadline = time.monotonic() + 5.0
    while task.status == TaskResultStatus.RUNNING and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
        task = await fetch()
    assert task.status == TaskResultStatus.SUCCESSFUL and task.worker_ids[-1].startswith("web-")
