"""The scheduler on PostgreSQL, in processes of their own: two pollers ticking at the same
moment claim each due row once (``SELECT ... FOR UPDATE SKIP LOCKED``, then the guarded
transition), a poller killed mid-batch holds its rows only while it lives (another skips them,
then does them once it is gone), and nothing is done twice."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.app_shell import shell_json
from tests.support.processes import REPO_ROOT, ServedApp, app_environment
from tests.support.services import scratch_postgres

ROUNDS, CALLS = 30, 20


@pytest.fixture
def app(tmp_path: Path) -> Iterator[ServedApp]:
    with scratch_postgres("mrtrweb_scheduler") as url:
        served = ServedApp(tmp_path, app_environment(tmp_path, DATABASE_URL=url))
        served.migrate(static=False)
        shell_json(
            served, f"from tests.calls.scheduler_racer import setup; setup({ROUNDS}, {CALLS})"
        )
        yield served


def _racer(app: ServedApp, code: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "manage.py",
            "shell",
            "-c",
            f"from tests.calls.scheduler_racer import *; {code}",
        ],
        cwd=REPO_ROOT,
        env=app.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _stored(app: ServedApp) -> Any:
    return shell_json(app, "from tests.calls.scheduler_racer import stored; stored()")


def _wait_for(path: Path, racers: list[subprocess.Popen[str]]) -> None:
    deadline = time.monotonic() + 120  # interpreters and Django starting on a busy box
    while not path.exists():
        assert time.monotonic() < deadline, f"no {path.name}"
        assert all(r.poll() is None for r in racers), "a racer died early"
        time.sleep(0.01)


def test_two_pollers_at_once_claim_each_due_row_once(app: ServedApp) -> None:
    gate = Path(tempfile.mkdtemp(dir=app.root))
    racers = [_racer(app, f"race({str(gate)!r})") for _ in range(2)]
    deadline = time.monotonic() + 120
    while len(list(gate.glob("ready-*"))) < len(racers):
        assert time.monotonic() < deadline, "the racers did not get ready"
        assert all(r.poll() is None for r in racers), "a racer died before the go"
        time.sleep(0.01)
    (gate / "go").touch()
    ticks = []
    for racer in racers:
        out, err = racer.communicate(timeout=120)
        assert racer.returncode == 0, err[-3000:]
        ticks.append(json.loads(out.strip().splitlines()[-1]))
    assert sum(t["expired"] for t in ticks) == ROUNDS
    assert sum(t["requeued"] for t in ticks) == CALLS
    stored = _stored(app)
    assert list(stored["expired"].values()) == [1] * ROUNDS
    assert stored["statuses"] == ["expired"]
    assert sorted(stored["sends"].values()) == [1] * CALLS


def test_a_poller_killed_mid_batch_leaves_its_rows_to_the_next(app: ServedApp) -> None:
    gate = Path(tempfile.mkdtemp(dir=app.root))
    hung = _racer(app, f"hang_mid_batch({str(gate)!r})")
    _wait_for(gate / "mid-batch", [hung])
    try:
        # Its batch is locked while it lives: another poller skips those rows, and its first
        # expiry is not committed (nobody sees it).
        beside = shell_json(app, "from tests.calls.scheduler_racer import tick; tick()")
        assert beside["expired"] == 0
        assert set(_stored(app)["expired"].values()) == {0}
    finally:
        hung.send_signal(signal.SIGKILL)
        hung.communicate(timeout=30)
    # Killed: its transaction rolled back, its rows free; the next tick does all of them, once.
    after = shell_json(app, "from tests.calls.scheduler_racer import tick; tick()")
    assert after["expired"] == ROUNDS
    stored = _stored(app)
    assert list(stored["expired"].values()) == [1] * ROUNDS
    assert stored["statuses"] == ["expired"]
