"""Calls on a handshake-era server (mcp 1.x FastMCP) through the engine.

A plain tool completes as on a 2026-07-28 server, in a session the call closes. A question
asked on the call's stream becomes a round (engine.streams), answered through the engine as
any round is; the answer goes back on the stream, and the call goes on.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from mrtrweb.calls import engine, handoff
from mrtrweb.calls.engine.handshake_calls import wait_idle
from mrtrweb.calls.models import Call, Round
from mrtrweb.servers.catalog import refresh_catalog
from mrtrweb.servers.models import Connection
from tests.peers.mcp1 import Mcp1Peer
from tests.support.factories import make_connection

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _conversations_end() -> Iterator[None]:
    yield
    # A conversation left running would write into the next test's database.
    if not wait_idle(20.0):
        handoff.shutdown()
        pytest.fail("a conversation was still running after the test")


def start(conn: Connection, user: Any, tool: str, arguments: Any) -> Call:
    return engine.start_call(
        connection=conn, method=Call.Method.TOOL, target=tool, arguments=arguments, user=user
    )


def test_a_plain_tool_completes_and_its_session_is_closed(mcp1_peer: Mcp1Peer, user: Any) -> None:
    conn = make_connection(mcp1_peer, name="old-plain")
    before = mcp1_peer.sessions()
    call = start(conn, user, "echo", {"text": "héllo"})
    assert call.status == Call.Status.COMPLETED, call.error
    assert call.result["content"] == [{"type": "text", "text": "echo: héllo"}]
    after = mcp1_peer.sessions()
    # The era is found on the way: a 2026-07-28 request is refused, an initialize says who the
    # server is (its session closed at once), then the call has a session of its own.
    assert after["opened"] - before["opened"] == 2
    assert after["closed"] - before["closed"] == 2


def test_a_probed_connection_goes_straight_to_the_handshake(mcp1_peer: Mcp1Peer, user: Any) -> None:
    conn = make_connection(mcp1_peer, name="old-probed")
    report = refresh_catalog(conn)
    assert report.ok and report.era == "legacy"
    conn.refresh_from_db()
    assert conn.era == Connection.Era.LEGACY
    seen = len(mcp1_peer.requests())
    call = start(conn, user, "echo", {"text": "x"})
    assert call.status == Call.Status.COMPLETED, call.error
    sent = mcp1_peer.requests()[seen:]
    # No 2026-07-28 request first: initialize, initialized, the stream, the call, DELETE.
    assert [r["rpc"] for r in sent if r["http"] == "POST"] == [
        "initialize",
        "notifications/initialized",
        "tools/call",
    ]
    assert [r["http"] for r in sent][-1] == "DELETE"


def test_a_question_on_an_unprobed_connection_becomes_a_round(
    mcp1_peer: Mcp1Peer, user: Any
) -> None:
    # Not probed: the 2026-07-28 request is refused first, then the call's conversation runs.
    conn = make_connection(mcp1_peer, name="old-unprobed")
    call = start(conn, user, "ask_twice", {})
    assert call.status == Call.Status.WAITING, call.error
    round = call.rounds.get()
    assert round.carrier == Round.Carrier.STREAM
    engine.answer(round, {"elicitation": {"action": "cancel"}}, user, deliver_within=10)
    call.refresh_from_db()
    assert call.status == Call.Status.COMPLETED, call.error
    assert call.result["content"][0]["text"] == "stopped at name: cancel"


def test_a_prompt_and_a_resource_complete(mcp1_peer: Mcp1Peer, user: Any) -> None:
    conn = make_connection(mcp1_peer, name="old-pr", era=Connection.Era.LEGACY)
    prompt = engine.start_call(
        connection=conn,
        method=Call.Method.PROMPT,
        target="greet",
        arguments={"name": "Ada"},
        user=user,
    )
    assert prompt.status == Call.Status.COMPLETED, prompt.error
    assert "Ada" in prompt.result["messages"][0]["content"]["text"]
    resource = engine.start_call(
        connection=conn,
        method=Call.Method.RESOURCE,
        target="peer://readme",
        arguments=None,
        user=user,
    )
    assert resource.status == Call.Status.COMPLETED, resource.error
    assert resource.result["contents"][0]["text"] == "the mcp 1.x peer"


def test_a_stateless_server_runs_a_plain_tool(mcp1_stateless_peer: Mcp1Peer, user: Any) -> None:
    conn = make_connection(mcp1_stateless_peer, name="old-stateless")
    call = start(conn, user, "echo", {"text": "no session"})
    assert call.status == Call.Status.COMPLETED, call.error
    assert call.result["content"][0]["text"] == "echo: no session"
    assert mcp1_stateless_peer.sessions()["opened"] == 0
