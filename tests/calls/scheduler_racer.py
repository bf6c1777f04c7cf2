"""What each process of the scheduler races runs (``manage.py shell -c``,
tests/calls/test_scheduler_race.py): set up rows that are due, run one tick when every racer
is ready, hang mid-batch to be killed, or show what is stored. Each prints one JSON line."""

from __future__ import annotations

import json
import os
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.utils import timezone

from mrtrweb.calls import engine
from mrtrweb.calls.engine import due
from mrtrweb.calls.models import Call, Round
from mrtrweb.servers.models import Connection


def setup(rounds: int, calls: int) -> None:
    """``rounds`` parked rounds past their state lifetime, and ``calls`` started calls never
    sent (their process died), all due a minute ago."""
    sam = get_user_model().objects.create_user("sam", password="pw-sam-race-1")
    conn = Connection.objects.create(name="raced", title="Raced", url="http://127.0.0.1:9/mcp")
    ago = timezone.now() - timedelta(minutes=1)
    for n in range(rounds):
        call = Call.objects.create(
            connection=conn,
            method=Call.Method.TOOL,
            target=f"parked-{n}",
            started_by=sam,
            status=Call.Status.WAITING,
        )
        Round.objects.create(call=call, index=1, input_requests={}, expires_at=ago)
    for n in range(calls):
        Call.objects.create(
            connection=conn,
            method=Call.Method.TOOL,
            target=f"unsent-{n}",
            started_by=sam,
            status=Call.Status.RUNNING,
            watch_at=ago,
        )
    print(json.dumps({"rounds": rounds, "calls": calls}))


def _wait_for_go(gate: str) -> None:
    Path(gate, f"ready-{os.getpid()}").touch()
    while not Path(gate, "go").exists():
        time.sleep(0.001)


def race(gate: str) -> None:
    """Say ready (a file in ``gate``), wait for the go (``gate/go``), then run one tick."""
    _wait_for_go(gate)
    print(json.dumps(engine.run_due()))


def hang_mid_batch(gate: str) -> None:
    """Run one tick that expires its first round, then hangs (``gate/mid-batch`` says so)
    until killed: what a worker killed mid-batch leaves."""
    expire = due.expire_if_due

    def expire_then_hang(round_id: int, *, now: Any = None) -> bool:
        expire(round_id, now=now)
        Path(gate, "mid-batch").touch()
        threading.Event().wait()  # until killed
        return True

    due.expire_if_due = expire_then_hang  # type: ignore[assignment]
    engine.run_due()


def tick() -> None:
    print(json.dumps(engine.run_due()))


def stored() -> None:
    """How often each round was expired and each call queued to be sent."""
    from django_tasks_db.models import DBTaskResult

    expired = {
        str(r.pk): r.events.filter(kind="expired").count() for r in Round.objects.order_by("pk")
    }
    statuses = sorted({r.status for r in Round.objects.all()})
    sends: dict[str, int] = {}
    for row in DBTaskResult.objects.filter(task_path__endswith=".send_call"):
        key = str(row.args_kwargs["args"][0])
        sends[key] = sends.get(key, 0) + 1
    print(json.dumps({"expired": expired, "statuses": statuses, "sends": sends}))
