"""Programs start calls with webhooks through both web processes at once, on PostgreSQL: no
request fails, none starts a call twice, every call has its webhook and hears it; retries
racing with one Idempotency-Key start one call, whichever process each lands on."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from tests.peers.fixtures import Peer
from tests.scaleout.conftest import CALLER, Topology
from tests.webhooks.receiver import Receiver, running_receiver

STARTS = 20
RETRIES = 12

_TOKEN = """
from django.contrib.auth import get_user_model
from mrtrweb.api.models import ApiToken
token, plain = ApiToken.issue(get_user_model().objects.get(username={caller!r}), "scale")
print(plain, token.webhook_secret)
"""


@pytest.fixture(scope="module")
def token(topology: Topology) -> tuple[str, str]:
    """The caller's API token and its webhook secret."""
    plain, secret = topology.app.shell(_TOKEN.format(caller=CALLER[0])).split()[-2:]
    return plain, secret


def _all_at_once(count: int, send: Any) -> list[Any]:
    go = threading.Barrier(count)

    def one(n: int) -> Any:
        go.wait()
        return send(n)

    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(one, range(count)))


def _post(topology: Topology, n: int, plain: str, body: dict[str, Any], **headers: str) -> Any:
    base = topology.url_a if n % 2 == 0 else topology.url_b
    return httpx.post(
        f"{base}/api/v1/calls",
        json=body,
        headers={"Authorization": f"Bearer {plain}", **headers},
        timeout=60,
    )


def _body(n: int, receiver: Receiver) -> dict[str, Any]:
    if n % 4 < 2:  # one process, then the other, for each kind
        return {
            "server": "peer",
            "name": "echo",
            "arguments": {"text": f"scale {n}"},
            "webhook": receiver.url(f"/hook/{n}"),
        }
    return {
        "server": "peer",
        "name": "approve_deploy",
        "arguments": {"service": f"svc-{n}"},
        "webhook": receiver.url(f"/hook/{n}"),
    }


def test_concurrent_starts_with_webhooks_through_two_processes(
    topology: Topology, token: tuple[str, str]
) -> None:
    plain, secret = token
    with topology.db() as db:
        before = db.execute("SELECT COALESCE(MAX(id), 0) FROM calls_call").fetchone()[0]
    with running_receiver(secret) as receiver:
        responses = _all_at_once(STARTS, lambda n: _post(topology, n, plain, _body(n, receiver)))
        assert [r.status_code for r in responses] == [201] * STARTS, [
            r.text[:300] for r in responses if r.status_code != 201
        ]
        expected = {
            f"/hook/{n}": "call.finished" if n % 4 < 2 else "round.pending" for n in range(STARTS)
        }
        deadline = time.monotonic() + 60
        heard: dict[str, str] = {}
        while time.monotonic() < deadline and set(heard) != set(expected):
            topology.check_alive()
            for received in list(receiver.received):
                if received.verified:
                    heard.setdefault(received.path, received.headers.get("x-mrtr-event", ""))
            time.sleep(0.2)
    assert heard == expected
    ids = sorted(r.json()["id"] for r in responses)
    with topology.db() as db:
        calls = db.execute("SELECT id FROM calls_call WHERE id > %s", (before,)).fetchall()
        hooks = db.execute(
            "SELECT call_id FROM webhooks_subscription WHERE call_id > %s", (before,)
        ).fetchall()
    assert sorted(c for (c,) in calls) == ids
    assert sorted(c for (c,) in hooks) == ids


def test_retries_racing_with_one_key_start_one_call(
    topology: Topology, token: tuple[str, str], fastmcp_process_peer: Peer
) -> None:
    plain, _ = token
    mark = fastmcp_process_peer.mark()
    body = {"server": "peer", "name": "echo", "arguments": {"text": "scale once"}}
    responses = _all_at_once(
        RETRIES, lambda n: _post(topology, n, plain, body, **{"Idempotency-Key": "scale-race"})
    )
    assert sorted(r.status_code for r in responses) == [200] * (RETRIES - 1) + [201], [
        r.text[:300] for r in responses
    ]
    assert len({r.json()["id"] for r in responses}) == 1
    sent = [
        r
        for r in fastmcp_process_peer.recorded(mark)
        if (r["json"] or {}).get("method") == "tools/call"
        and r["json"]["params"].get("arguments") == {"text": "scale once"}
    ]
    assert len(sent) == 1
    other = _post(
        topology,
        1,
        plain,
        {**body, "arguments": {"text": "x"}},
        **{"Idempotency-Key": "scale-race"},
    )
    assert other.status_code == 422 and "another request" in other.json()["detail"]
    for name in ("web_a", "web_b"):
        assert "Traceback" not in topology.app.log(name)
