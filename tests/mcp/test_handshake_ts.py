"""The handshake-era client against the TypeScript SDK 1.x server (tests/peers/ts_server.cjs).

That SDK sends a question a tool asks without naming its request on the session's standalone
GET stream, not on the call's: the client must hold that stream open to be asked at all.
"""

from __future__ import annotations

import mcp_types
import pytest

from mrtrweb.mcp import ConnectionSettings
from mrtrweb.mcp.handshake import HandshakeClient
from tests.mcp.test_handshake import Person, accept, closed_all, text
from tests.peers.mcp1 import Mcp1Peer


def settings(peer: Mcp1Peer) -> ConnectionSettings:
    return ConnectionSettings(url=peer.url, connect_timeout=5.0, read_timeout=20.0)


async def test_plain_tool_in_a_session_that_is_closed(ts_peer: Mcp1Peer) -> None:
    before = ts_peer.sessions()
    async with HandshakeClient(settings(ts_peer)) as client:
        found = await client.open()
        assert (found.protocol_version, found.server_info.name) == ("2025-11-25", "mrtrweb-ts-peer")
        assert [t.name for t in (await client.list_tools()).items][:2] == ["echo", "ask_twice"]
        assert text(await client.call_tool("echo", {"text": "hi"})) == "echo: hi"
    closed_all(ts_peer, before, 1)


async def test_questions_on_the_standalone_stream_are_answered(ts_peer: Mcp1Peer) -> None:
    person = Person(accept(name="Ada"), accept(color="teal"))
    async with HandshakeClient(settings(ts_peer), on_elicit=person) as client:
        assert text(await client.call_tool("ask_twice", {})) == "Ada likes teal"
    assert len(person.asked) == 2


@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_decline_and_cancel(ts_peer: Mcp1Peer, action: str) -> None:
    person = Person(mcp_types.ElicitResult(action=action))
    async with HandshakeClient(settings(ts_peer), on_elicit=person) as client:
        assert text(await client.call_tool("ask_twice", {})) == f"stopped at name: {action}"


async def test_a_url_question_on_the_call_stream(ts_peer: Mcp1Peer) -> None:
    person = Person(mcp_types.ElicitResult(action="accept"))
    async with HandshakeClient(settings(ts_peer), on_elicit=person) as client:
        assert text(await client.call_tool("url_question", {})) == "url: accept"
    (asked,) = person.asked
    assert isinstance(asked.params, mcp_types.ElicitRequestURLParams)
    assert asked.params.url == f"{ts_peer.base_url}/authorize?ref=ts"


async def test_a_ping_on_the_standalone_stream_is_answered(ts_peer: Mcp1Peer) -> None:
    async with HandshakeClient(settings(ts_peer)) as client:
        assert text(await client.call_tool("ping_client", {})) == "pong"


async def test_stateless(ts_stateless_peer: Mcp1Peer) -> None:
    async with HandshakeClient(settings(ts_stateless_peer)) as client:
        assert text(await client.call_tool("echo", {"text": "x"})) == "echo: x"
        assert client.session_id is None
    assert ts_stateless_peer.sessions()["opened"] == 0
