"""Five approvers approve the same proposal at the same moment, each in a process of its own
sharing PostgreSQL, against the fastmcp peer in its own process: the quorum (four approvals,
the proposer's included) is met exactly once, the proposal reaches the server exactly once
(counted at the peer), and the approvals after it are told the round is closed. The row lock
in engine.quorum.vote is what keeps the count from ever falling short when votes race."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.peers.fixtures import Peer
from tests.support.app_shell import shell_json
from tests.support.processes import REPO_ROOT, ServedApp, app_environment
from tests.support.services import scratch_postgres

RACERS = ["bob", "cy", "dee", "eve", "fay"]


@pytest.fixture
def app(tmp_path: Path) -> Iterator[ServedApp]:
    with scratch_postgres("mrtrweb_quorum") as url:
        served = ServedApp(tmp_path, app_environment(tmp_path, DATABASE_URL=url))
        served.migrate(static=False)
        yield served


def _retries(peer: Peer, since: int) -> list[dict[str, Any]]:
    return [
        entry
        for entry in peer.recorded(since)
        if (entry["json"] or {}).get("method") == "tools/call"
        and "inputResponses" in (entry["json"].get("params") or {})
    ]


def test_concurrent_approvals_deliver_once(app: ServedApp, fastmcp_process_peer: Peer) -> None:
    peer = fastmcp_process_peer
    set_up = shell_json(
        app, f"from tests.calls.engine.quorum_racer import setup; setup({peer.url!r})"
    )
    round_id = set_up["round"]
    assert set_up["status"] == "pending"  # a proposal, nothing sent yet
    since = peer.mark()

    gate = Path(tempfile.mkdtemp(dir=app.root))
    racers = [
        subprocess.Popen(
            [
                sys.executable,
                "manage.py",
                "shell",
                "-c",
                "from tests.calls.engine.quorum_racer import race; "
                f"race({str(gate)!r}, {round_id}, {name!r})",
            ],
            cwd=REPO_ROOT,
            env=app.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in RACERS
    ]
    deadline = time.monotonic() + 120  # five interpreters and Django starting on a busy box
    while len(list(gate.glob("ready-*"))) < len(RACERS):
        assert time.monotonic() < deadline, "the racers did not get ready"
        assert all(r.poll() is None for r in racers), "a racer died before the go"
        time.sleep(0.01)
    (gate / "go").touch()
    outcomes = []
    for racer in racers:
        out, err = racer.communicate(timeout=120)
        assert racer.returncode == 0, err[-3000:]
        outcomes.append(json.loads(out.strip().splitlines()[-1])["outcome"])

    # Three racers' approvals were needed after the proposer's; the other two came too late.
    assert sorted(outcomes) == ["too late", "too late", "voted", "voted", "voted"]
    stored = shell_json(app, f"from tests.calls.engine.quorum_racer import show; show({round_id})")
    assert stored["round"] == "delivered" and stored["call"] == "completed"
    assert stored["answered"] == 1 and stored["delivered"] == 1
    assert len(stored["votes"]) == 4 and "alice" in stored["votes"]
    assert stored["result"]["status"] == "deployed"
    # Exactly one delivery reached the server, carrying the proposal and no comment.
    (sent,) = _retries(peer, since)
    assert sent["json"]["params"]["inputResponses"]["approval"]["content"]["replicas"] == 3
    assert "ok from" not in sent["body"]
