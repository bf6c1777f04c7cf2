"""Handshake-era servers through the JSON API of a real web process (uvicorn): the mcp 1.x
FastMCP peer and the TypeScript SDK 1.x peer, stateful and stateless.

Their questions (``elicitation/create`` on the open stream of a call) are rounds like any other:
listed with the call, answered with ``POST /rounds/{id}/responses``, validated by the same code;
the answer goes back on the stream as the JSON-RPC response and the call goes on. Each peer
counts what it received, so every answer is proved sent exactly once, and every session the
call opened closed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest

from mrtrweb.calls.engine.handshake_calls import NO_SESSION
from mrtrweb.calls.engine.streams import TIMED_OUT
from tests.api.handshake_live import Caller, request_of, result_text, seed_code
from tests.api.live import ApiApp, serve
from tests.peers.mcp1 import Mcp1Peer
from tests.support.app_shell import shell_json

PEERS = ("mcp1", "ts")
# A connection's question deadline unless its operator set one: ten minutes.
DEFAULT_QUESTION_DEADLINE = timedelta(minutes=10)


@pytest.fixture(scope="module")
def peers(
    mcp1_peer: Mcp1Peer,
    mcp1_stateless_peer: Mcp1Peer,
    ts_peer: Mcp1Peer,
    ts_stateless_peer: Mcp1Peer,
) -> dict[str, Mcp1Peer]:
    return {
        "mcp1": mcp1_peer,
        "mcp1-stateless": mcp1_stateless_peer,
        "ts": ts_peer,
        "ts-stateless": ts_stateless_peer,
    }


@pytest.fixture(scope="module")
def live(peers: dict[str, Mcp1Peer]) -> Iterator[ApiApp]:
    for app in serve(peers["mcp1"], worker=True):
        shell_json(app, seed_code(peers), timeout=60)
        yield app


@pytest.fixture
def caller(live: ApiApp) -> Iterator[Caller]:
    someone = Caller(live.base_url, live.token)
    yield someone
    someone.close()


@pytest.fixture(params=PEERS)
def server(request: pytest.FixtureRequest, peers: dict[str, Mcp1Peer]) -> Iterator[str]:
    """A stateful peer's connection name; afterwards, every session it opened is closed."""
    peer = peers[request.param]
    before = peer.sessions()
    yield request.param
    after = peer.sessions()
    assert after["active"] == before["active"], after
    assert after["opened"] - before["opened"] == after["closed"] - before["closed"] >= 1


def answers_since(peer: Mcp1Peer, seen: int) -> list[tuple[Any, str | None]]:
    return [(a["id"], a["action"]) for a in peer.answers()[seen:]]


def test_a_plain_tool(caller: Caller, server: str) -> None:
    call = caller.finished(caller.start(server, "echo", {"text": "héllo"})["id"])
    assert call["status"] == "completed", call
    assert result_text(call) == "echo: héllo"
    assert call["rounds"] == []


def test_asks_twice_each_answer_sent_once(
    caller: Caller, server: str, peers: dict[str, Mcp1Peer]
) -> None:
    peer = peers[server]
    seen = len(peer.answers())
    call = caller.start(server, "ask_twice")
    first = caller.next_round(call)
    assert first is not None, call
    assert request_of(first)["params"]["message"] == "What is your name?"
    assert first["url"].endswith(f"/rounds/{first['id']}/")
    # The stream's deadline, shown as any round's "answer before".
    created = datetime.fromisoformat(first["createdAt"].replace("Z", "+00:00"))
    expires = datetime.fromisoformat(first["expiresAt"].replace("Z", "+00:00"))
    assert abs((expires - created) - DEFAULT_QUESTION_DEADLINE) < timedelta(seconds=5)

    # Validated like every round: a required field left out is refused, nothing sent.
    refused = caller.answer(first, "accept", {})
    assert refused.status_code == 422, refused.text
    assert refused.json()["errors"][0]["pointer"].endswith("/content/name")
    assert answers_since(peer, seen) == []

    taken = caller.answer(first, "accept", {"name": "Ada"})
    assert taken.status_code == 202, taken.text
    second = caller.next_round(caller.call(call["id"]), after=first["index"])
    assert second is not None
    assert request_of(second)["params"]["message"] == "Hello Ada: your favourite colour?"
    assert caller.answer(second, "accept", {"color": "teal"}).status_code == 202

    done = caller.finished(call["id"])
    assert done["status"] == "completed", done
    assert result_text(done) == "Ada likes teal"
    assert [r["status"] for r in done["rounds"]] == ["delivered", "delivered"]
    sent = answers_since(peer, seen)
    assert [action for _, action in sent] == ["accept", "accept"]
    assert len({rid for rid, _ in sent}) == 2
    # A second answer to a round already sent is refused, and never reaches the server.
    again = caller.answer(first, "decline")
    assert again.status_code == 409
    assert len(peer.answers()) == seen + 2


def test_a_url_mode_question(caller: Caller, server: str, peers: dict[str, Mcp1Peer]) -> None:
    call = caller.start(server, "url_question")
    asked = caller.next_round(call)
    assert asked is not None, call
    params = request_of(asked)["params"]
    assert params["mode"] == "url"
    assert params["url"].startswith(f"{peers[server].base_url}/authorize?ref=")
    assert caller.answer(asked, "accept").status_code == 202
    done = caller.finished(call["id"])
    assert (done["status"], result_text(done)) == ("completed", "url: accept")


def test_decline(caller: Caller, server: str) -> None:
    call = caller.start(server, "ask_twice")
    asked = caller.next_round(call)
    assert asked is not None
    assert caller.answer(asked, "decline").status_code == 202
    done = caller.finished(call["id"])
    assert (done["status"], result_text(done)) == ("completed", "stopped at name: decline")


def test_cancel_in_the_second_round(caller: Caller, server: str) -> None:
    call = caller.start(server, "ask_twice")
    first = caller.next_round(call)
    assert first is not None
    assert caller.answer(first, "accept", {"name": "Bo"}).status_code == 202
    second = caller.next_round(caller.call(call["id"]), after=first["index"])
    assert second is not None
    assert caller.answer(second, "cancel").status_code == 202
    done = caller.finished(call["id"])
    assert (done["status"], result_text(done)) == ("completed", "stopped at color: cancel")


@pytest.mark.parametrize("server", ["mcp1-stateless", "ts-stateless"])
def test_a_stateless_server_runs_plain_tools(caller: Caller, server: str) -> None:
    call = caller.finished(caller.start(server, "echo", {"text": "x"})["id"])
    assert (call["status"], result_text(call)) == ("completed", "echo: x")


def test_a_stateless_mcp1_server_cannot_take_an_answer(
    caller: Caller, peers: dict[str, Mcp1Peer]
) -> None:
    """mcp 1.x without sessions asks, but an answer would reach nobody (tests/peers/
    test_handshake_peers.py): no round is parked for it, the call fails and says why."""
    peer = peers["mcp1-stateless"]
    seen = len(peer.answers())
    call = caller.finished(caller.start("mcp1-stateless", "ask_twice")["id"])
    assert call["status"] == "failed", call
    assert [r for r in call["rounds"] if r["status"] == "pending"] == []
    assert call["error"] == NO_SESSION
    assert answers_since(peer, seen) == []


def test_a_stateless_typescript_server_refuses_to_ask(caller: Caller) -> None:
    """The TypeScript SDK without sessions never asks: its tool answers with an error of its
    own, shown as the result."""
    call = caller.finished(caller.start("ts-stateless", "ask_twice")["id"])
    assert call["status"] == "completed", call
    assert call["result"]["isError"] is True
    assert result_text(call) == "Client does not support form elicitation."
    assert call["rounds"] == []


def _deadline_of(round_: dict) -> timedelta:
    created = datetime.fromisoformat(round_["createdAt"].replace("Z", "+00:00"))
    return datetime.fromisoformat(round_["expiresAt"].replace("Z", "+00:00")) - created


def test_the_question_deadline_is_the_connections(
    live: ApiApp, caller: Caller, peers: dict[str, Mcp1Peer]
) -> None:
    """An operator sets it (``questionDeadline``); the round's "answer before" follows it, and
    when it passes unanswered the server is told ``cancel`` and the call ends expired."""
    live.shell(seed_code({"mcp1-quick": peers["mcp1"]}))
    with Caller(live.base_url, live.operator_token).http as operator:
        changed = operator.patch("/servers/mcp1-quick", json={"questionDeadline": 2})
        assert changed.status_code == 200, changed.text
        assert changed.json()["questionDeadline"] == 2
    peer = peers["mcp1"]
    seen = len(peer.answers())
    call = caller.start("mcp1-quick", "ask_twice")
    asked = caller.next_round(call)
    assert asked is not None, call
    assert abs(_deadline_of(asked) - timedelta(seconds=2)) < timedelta(seconds=1)
    time.sleep(2.5)  # the deadline itself is what is tested
    done = caller.finished(call["id"])
    assert (done["status"], done["error"]) == ("expired", TIMED_OUT), done
    assert done["rounds"][0]["status"] == "expired"
    assert [a["action"] for a in peer.answers()[seen:]] == ["cancel"]
    # Too late now: an answer is refused and never sent.
    assert caller.answer(asked, "accept", {"name": "Late"}).status_code == 409
    assert len(peer.answers()) == seen + 1


def test_a_server_that_gives_up_on_its_question(
    live: ApiApp, caller: Caller, ts_factory: Callable[..., Mcp1Peer]
) -> None:
    """A TypeScript SDK server waits 60 s for an answer unless told otherwise; this one gives
    up after one second (it sends notifications/cancelled, and its tool fails). The round no
    longer waits for anybody: a late answer is refused, never sent."""
    peer = ts_factory("--question-timeout", "1000")
    live.shell(seed_code({"ts-impatient": peer}))
    call = caller.start("ts-impatient", "ask_twice")
    asked = caller.next_round(call)
    assert asked is not None, call
    done = caller.finished(call["id"])
    assert done["status"] == "completed", done
    assert done["result"]["isError"] is True
    assert "timed out" in result_text(done).lower(), done
    assert done["rounds"][0]["status"] != "pending", done
    assert caller.answer(asked, "accept", {"name": "Late"}).status_code == 409
    assert peer.answers() == []
    after = peer.sessions()
    assert after["opened"] == after["closed"] >= 1 and after["active"] == 0


def test_progress_before_the_first_question_does_not_hold_the_start(
    caller: Caller, live: ApiApp
) -> None:
    """The API's start sends the call from the request's own thread, and the conversation
    goes on on the shared loop. A progress report before the first question is written to
    the call's row by thread-sensitive code: it must not be sent to the request's thread,
    which is waiting for that very conversation to settle (it would wait forever), nor fail
    once the request is over (the thread is then another request's)."""
    started = caller.http.post(
        "/calls", json={"server": "mcp1", "name": "progress_then_ask", "arguments": {}}, timeout=30
    )
    assert started.status_code == 201, started.text
    call = started.json()
    asked = caller.next_round(call)
    assert asked is not None, call
    assert caller.answer(asked, "accept", {"name": "Ada"}).status_code == 202
    done = caller.finished(call["id"])
    assert done["status"] == "completed", done
    assert result_text(done) == "found Ada"
    # The progress reports were kept on the call's row (the thread-sensitive write ran).
    kept = shell_json(
        live,
        "import json; from mrtrweb.calls.models import Call; "
        f"print(json.dumps(Call.objects.get(pk={call['id']}).progress))",
    )
    assert kept and kept["message"] in ("looking things up", "done"), kept
