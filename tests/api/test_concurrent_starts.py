"""Many programs start calls with webhooks at the same moment, against the app served for real
(uvicorn, its db_worker, the embedded SQLite database) and the real fastmcp peer, while another
process keeps taking SQLite's write lock: no request fails, none starts a call twice, and
every call has its webhook and hears it."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import httpx
import pytest

from tests.api.live import ApiApp, serve
from tests.webhooks.receiver import Receiver, running_receiver

STARTS = 24
DELIVERY_TIMEOUT = 90.0


@pytest.fixture(scope="module")
def live(fastmcp_process_peer: Any) -> Iterator[ApiApp]:
    yield from serve(
        fastmcp_process_peer,
        worker=True,
        # The receiver runs on 127.0.0.1; retries come quickly.
        MRTRWEB_WEBHOOK_ALLOW_PRIVATE="1",
        MRTRWEB_WEBHOOK_BACKOFF="0.5",
    )


@pytest.fixture(scope="module")
def secrets(live: ApiApp) -> dict[str, str]:
    """The webhook secret of each person's token (ann, an end user; otto, an operator)."""
    code = (
        "from mrtrweb.api.models import ApiToken\n"
        "for t in ApiToken.objects.select_related('user'):\n"
        "    print(t.user.username, t.webhook_secret)"
    )
    lines = [line.split() for line in live.shell(code).splitlines()]
    return {words[0]: words[1] for words in lines if len(words) == 2}


def _database(live: ApiApp) -> sqlite3.Connection:
    return sqlite3.connect(live.root / "var" / "db.sqlite3", timeout=30)


def _rows(live: ApiApp, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    with _database(live) as db:
        return db.execute(sql, params).fetchall()


@contextmanager
def writer_holding_the_lock(live: ApiApp, hold: float = 0.15, gap: float = 0.1) -> Iterator[None]:
    """Another process's writes, as a manage.py command or a second worker makes them: take
    SQLite's write lock, keep it ``hold`` seconds, let go for ``gap``, again and again."""
    stop = threading.Event()
    taken = [0]

    def run() -> None:
        db = _database(live)
        db.isolation_level = None
        try:
            while not stop.is_set():
                db.execute("BEGIN IMMEDIATE")
                db.execute("CREATE TABLE IF NOT EXISTS load_test (n INTEGER)")
                db.execute("INSERT INTO load_test VALUES (1)")
                time.sleep(hold)
                db.execute("COMMIT")
                taken[0] += 1
                time.sleep(gap)
        finally:
            db.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(10)
    assert taken[0] > 0, "the writer never got the lock"


def _post(live: ApiApp, body: dict[str, Any], headers: dict[str, str] | None = None) -> Any:
    return httpx.post(
        live.url("/api/v1/calls"),
        json=body,
        headers={"Authorization": f"Bearer {live.token}", **(headers or {})},
        timeout=60,
    )


def _all_at_once(count: int, send: Any) -> list[Any]:
    go = threading.Barrier(count)

    def one(n: int) -> Any:
        go.wait()
        return send(n)

    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(one, range(count)))


def _body(n: int, receiver: Receiver) -> dict[str, Any]:
    # Half ask a person (round.pending), half finish at once (call.finished).
    if n % 2:
        return {
            "server": "peer",
            "name": "approve_deploy",
            "arguments": {"service": f"svc-{n}"},
            "webhook": receiver.url(f"/hook/{n}"),
        }
    return {
        "server": "peer",
        "name": "echo",
        "arguments": {"text": f"hello {n}"},
        "webhook": receiver.url(f"/hook/{n}"),
    }


def _heard(receiver: Receiver, expected: dict[str, str], live: ApiApp) -> dict[str, str]:
    """Wait until each path in ``expected`` received its event; returns what each got first."""
    deadline = time.monotonic() + DELIVERY_TIMEOUT
    while time.monotonic() < deadline:
        got: dict[str, str] = {}
        for received in list(receiver.received):
            if received.verified:
                got.setdefault(received.path, received.headers.get("x-mrtr-event", ""))
        if set(got) >= set(expected):
            return got
        live.check_alive()
        time.sleep(0.2)
    return got


def test_many_starts_with_webhooks_at_once_on_sqlite(live: ApiApp, secrets: dict[str, str]) -> None:
    before = _rows(live, "SELECT COALESCE(MAX(id), 0) FROM calls_call")[0][0]
    with running_receiver(secrets["ann"]) as receiver, writer_holding_the_lock(live):
        responses = _all_at_once(STARTS, lambda n: _post(live, _body(n, receiver)))
        statuses = [r.status_code for r in responses]
        assert statuses == [201] * STARTS, [r.text[:300] for r in responses if r.status_code != 201]
        ids = [r.json()["id"] for r in responses]
        expected = {
            f"/hook/{n}": "round.pending" if n % 2 else "call.finished" for n in range(STARTS)
        }
        heard = _heard(receiver, expected, live)
    assert heard == expected, live.logs_tail()
    assert len(set(ids)) == STARTS
    # No call was started twice, and every call has exactly its one webhook.
    calls = _rows(live, "SELECT id FROM calls_call WHERE id > ?", before)
    assert sorted(c for (c,) in calls) == sorted(ids)
    hooks = _rows(live, "SELECT call_id, url FROM webhooks_subscription WHERE call_id > ?", before)
    assert sorted(call for call, _ in hooks) == sorted(ids)
    for response, n in zip(responses, range(STARTS), strict=True):
        assert (response.json()["id"], receiver.url(f"/hook/{n}")) in hooks
    web_log = live.log("web")
    assert "database is locked" not in web_log and "Traceback" not in web_log, web_log[-3000:]


def test_a_call_is_never_seen_without_its_webhook(live: ApiApp, secrets: dict[str, str]) -> None:
    """While a slow tool runs, the call already exists, and its subscription with it: they
    were committed together, before the server was asked."""
    before = _rows(live, "SELECT COALESCE(MAX(id), 0) FROM calls_call")[0][0]
    seen_running: list[int] = []
    orphans: list[int] = []
    with running_receiver(secrets["otto"]) as receiver:
        body = {
            "server": "peer",
            "name": "sleep",
            "arguments": {"seconds": 1.5},
            "webhook": receiver.url("/slow"),
        }
        with ThreadPoolExecutor(1) as pool:
            started = pool.submit(
                httpx.post,
                live.url("/api/v1/calls"),
                json=body,
                headers={"Authorization": f"Bearer {live.operator_token}"},
                timeout=60,
            )
            while not started.done():
                for call_id, status, hook in _rows(
                    live,
                    "SELECT c.id, c.status, s.id FROM calls_call c "
                    "LEFT JOIN webhooks_subscription s ON s.call_id = c.id WHERE c.id > ?",
                    before,
                ):
                    if hook is None:
                        orphans.append(call_id)
                    elif status == "running":
                        seen_running.append(call_id)
                time.sleep(0.02)
            response = started.result()
        assert response.status_code == 201, response.text
        heard = _heard(receiver, {"/slow": "call.finished"}, live)
    assert orphans == []
    assert seen_running and set(seen_running) == {response.json()["id"]}
    assert heard == {"/slow": "call.finished"}


def test_concurrent_retries_with_one_key_start_one_call(
    live: ApiApp, fastmcp_process_peer: Any
) -> None:
    """The same request sent many times at once with one Idempotency-Key (a program's
    retries racing its first try): one call is started, every answer names it."""
    mark = fastmcp_process_peer.mark()
    body = {"server": "peer", "name": "echo", "arguments": {"text": "exactly once"}}
    with writer_holding_the_lock(live, hold=0.05, gap=0.05):
        responses = _all_at_once(12, lambda n: _post(live, body, {"Idempotency-Key": "race-7f1c"}))
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [200] * 11 + [201], [r.text[:300] for r in responses]
    assert len({r.json()["id"] for r in responses}) == 1
    replayed = [r for r in responses if r.status_code == 200]
    assert all(r.headers["idempotent-replayed"] == "true" for r in replayed)
    sent = [
        r
        for r in fastmcp_process_peer.recorded(mark)
        if (r["json"] or {}).get("method") == "tools/call"
        and r["json"]["params"].get("arguments") == {"text": "exactly once"}
    ]
    assert len(sent) == 1
    assert _rows(
        live, "SELECT COUNT(*) FROM calls_call WHERE arguments_json LIKE '%exactly once%'"
    ) == [(1,)]
    # Another body with the key the race used: refused, nothing started.
    other = _post(live, {**body, "arguments": {"text": "other"}}, {"Idempotency-Key": "race-7f1c"})
    assert other.status_code == 422
    assert other.headers["content-type"] == "application/problem+json"
    assert "used for another request" in other.json()["detail"]
