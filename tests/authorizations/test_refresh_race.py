"""Two processes refresh the same rotating refresh token at the same moment, against
PostgreSQL and a token endpoint that rotates refresh tokens and refuses a spent one: the
newest refresh token is the one kept, and both processes end up with the same live tokens.

Both ways are proven: with the row lock (what PostgreSQL gets: only one process asks the
token endpoint) and with compare-and-swap alone (what a database without row locks gets:
both ask, the loser is refused as a reuse and takes the winner's tokens). The processes are
``manage.py shell -c`` children running tests/authorizations/refresh_racer.py.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.authorizations import store_peer
from tests.authorizations.store_peer import Authority, OAuthPeer
from tests.support.processes import REPO_ROOT, ServedApp, app_environment
from tests.support.services import scratch_postgres

RACERS = 2


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


@pytest.fixture
def peer() -> Iterator[OAuthPeer]:
    # The token endpoint holds each refresh for a moment, so both requests are in flight.
    with store_peer.on_socket(Authority(refresh_delay=0.5)) as served:
        yield served


@pytest.fixture
def app(tmp_path: Path, peer: OAuthPeer) -> Iterator[ServedApp]:
    with scratch_postgres("mrtrweb_race") as url:
        served = ServedApp(tmp_path, app_environment(tmp_path, DATABASE_URL=url))
        served.migrate(static=False)
        tokens = peer.authority.issue("ada")
        _shell(
            served,
            "from tests.authorizations.refresh_racer import setup; "
            f"setup({peer.url!r}, {peer.base_url!r}, {store_peer.CLIENT_ID!r})",
            stdin=json.dumps(tokens),
        )
        yield served


def _shell(app: ServedApp, code: str, stdin: str = "") -> dict:
    # Not tests.support.app_shell.shell_json: the guard reads stderr too (the app's logs).
    done = app.manage("shell", "-c", code, input=stdin, timeout=120)
    assert "sekret" not in done.stdout + done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _race(app: ServedApp, *, lock: bool) -> list[dict]:
    """Start the racers; each reads the row, and once all have, they refresh at once."""
    gate = Path(tempfile.mkdtemp(dir=app.root))
    code = f"from tests.authorizations.refresh_racer import race; race({str(gate)!r}, {lock!r})"
    racers = [
        subprocess.Popen(
            [sys.executable, "manage.py", "shell", "-c", code],
            cwd=REPO_ROOT,
            env=app.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(RACERS)
    ]
    deadline = time.monotonic() + 90  # two interpreters and Django starting on a busy box
    while len(list(gate.glob("ready-*"))) < RACERS:
        assert time.monotonic() < deadline, "the racers did not get ready"
        assert all(racer.poll() is None for racer in racers), "a racer died before the go"
        time.sleep(0.01)
    (gate / "go").touch()
    results = []
    for racer in racers:
        out, err = racer.communicate(timeout=120)
        assert racer.returncode == 0, err[-3000:]
        assert "sekret" not in out + err
        results.append(json.loads(out.strip().splitlines()[-1]))
    return results


def _check_newest_kept(app: ServedApp, peer: OAuthPeer, results: list[dict]) -> None:
    stored = _shell(app, "from tests.authorizations.refresh_racer import show; show()")
    assert stored["status"] == "active", stored["reason"]
    # The refresh token kept is the newest the server issued (the only one still alive)...
    assert stored["refresh"] == digest(peer.authority.current_refresh_token("ada"))
    assert stored["version"] == 2  # one refresh stored, not two
    # ...and both processes use the same, newest, tokens.
    for result in results:
        assert result["status"] == "active"
        assert result["read_version"] == 1
        assert (result["access"], result["refresh"]) == (stored["access"], stored["refresh"])
    # It really works: one more refresh with it succeeds.
    before = len(peer.authority.token_requests)
    again = _race(app, lock=True)
    assert peer.authority.refreshes()[before:] == ["refresh"]
    assert {r["version"] for r in again} == {3}


def test_with_the_row_lock_only_one_process_asks(app: ServedApp, peer: OAuthPeer) -> None:
    results = _race(app, lock=True)
    assert sorted(r["asked"] for r in results) == [False, True]
    assert peer.authority.refreshes() == ["refresh"]  # the other waited and took its tokens
    _check_newest_kept(app, peer, results)


def test_with_compare_and_swap_alone_the_loser_takes_the_winners_tokens(
    app: ServedApp, peer: OAuthPeer
) -> None:
    results = _race(app, lock=False)
    # Both asked with the same refresh token: the server rotated it once and refused the
    # reuse; the refused process did not take that for a dead grant.
    assert sorted(peer.authority.refreshes()) == ["refresh", "reuse"]
    assert all(r["asked"] for r in results)
    _check_newest_kept(app, peer, results)
