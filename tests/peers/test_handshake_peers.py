"""What the handshake-era peers (mcp 1.x FastMCP, TypeScript SDK 1.x) really do, proved with
mrtrweb's own handshake client: every question tool on both, the answers each peer counts,
and what a server without sessions (stateless) does when a tool asks.

These are facts about the SDKs the engine and the docs rely on: a stateless server cannot take
an answer. mcp 1.x sends the question, but the answer lands in a new transport that never asked
it and the tool waits for ever; the TypeScript SDK refuses to ask at all.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import mcp_types
import pytest

from mrtrweb.mcp import ConnectionSettings
from mrtrweb.mcp.handshake import HandshakeClient
from tests.mcp.test_handshake import Person, accept, closed_all, text
from tests.peers.mcp1 import Mcp1Peer

# How long a test waits for a peer to record what it was sent (a bound, not a measurement).
RECORDED_WITHIN = 20.0


def settings(peer: Mcp1Peer) -> ConnectionSettings:
    return ConnectionSettings(url=peer.url, connect_timeout=5.0, read_timeout=30.0)


@pytest.fixture(params=["mcp1", "ts"])
def stateful(request: pytest.FixtureRequest) -> Mcp1Peer:
    return request.getfixturevalue(f"{request.param}_peer")


async def test_ask_twice_counts_both_answers(stateful: Mcp1Peer) -> None:
    before = stateful.sessions()
    seen = len(stateful.answers())
    person = Person(accept(name="Ada"), accept(color="teal"))
    async with HandshakeClient(settings(stateful), on_elicit=person) as client:
        assert text(await client.call_tool("ask_twice", {})) == "Ada likes teal"
        session = client.session_id
    answers = stateful.answers()[seen:]
    assert [(a["action"], a["session"], a["error"]) for a in answers] == [
        ("accept", session, False),
        ("accept", session, False),
    ]
    assert len({a["id"] for a in answers}) == 2
    closed_all(stateful, before, 1)


@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_decline_and_cancel_are_told_apart(stateful: Mcp1Peer, action: str) -> None:
    person = Person(accept(name="Ada"), mcp_types.ElicitResult(action=action))
    async with HandshakeClient(settings(stateful), on_elicit=person) as client:
        assert text(await client.call_tool("ask_twice", {})) == f"stopped at color: {action}"
    person = Person(mcp_types.ElicitResult(action=action))
    async with HandshakeClient(settings(stateful), on_elicit=person) as client:
        assert text(await client.call_tool("url_question", {})) == f"url: {action}"


async def _until(check: Callable[[], bool]) -> None:
    deadline = asyncio.get_running_loop().time() + RECORDED_WITHIN
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "the peer never recorded it"
        await asyncio.sleep(0.05)


async def test_a_stateless_mcp1_server_asks_but_never_hears_the_answer(
    mcp1_stateless_peer: Mcp1Peer,
) -> None:
    peer = mcp1_stateless_peer
    seen = len(peer.answers())
    person = Person(accept(name="Ada"), accept(color="teal"))
    async with HandshakeClient(settings(peer), on_elicit=person) as client:
        call = asyncio.create_task(client.call_tool("ask_twice", {}))
        # The question came on the call's stream, and the answer was POSTed (without a
        # session: there is none) ...
        await _until(lambda: len(peer.answers()) > seen)
        (answer,) = peer.answers()[seen:]
        assert (answer["action"], answer["session"]) == ("accept", None)
        # ... to a transport that never asked it: the tool still waits for its answer.
        await _until(lambda: "unknown request ID" in peer.output())
        assert not call.done()
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
    assert len(person.asked) == 1  # the second question never comes
    assert peer.sessions()["opened"] == 0


async def test_a_stateless_typescript_server_refuses_to_ask(ts_stateless_peer: Mcp1Peer) -> None:
    person = Person()
    async with HandshakeClient(settings(ts_stateless_peer), on_elicit=person) as client:
        for tool, mode in (("ask_twice", "form"), ("url_question", "url")):
            result = await client.call_tool(tool, {})
            assert result.is_error
            assert text(result) == f"Client does not support {mode} elicitation."
    assert person.asked == []
    assert ts_stateless_peer.answers() == []
