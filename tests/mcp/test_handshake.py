"""The handshake-era client (mrtrweb.mcp.handshake) against a real mcp 1.x FastMCP server.

The peer (tests/peers/mcp1_server.py) counts the sessions it issued and those DELETEd, and
records every request's session and version headers, so each test proves what it opened it
closed.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import httpx
import mcp_types
import pytest

from mrtrweb.mcp import AuthorizationRequired, ConnectionSettings
from mrtrweb.mcp.handshake import HandshakeClient, UnsupportedHandshakeVersion
from tests.peers.mcp1 import Mcp1Peer


def settings(peer: Mcp1Peer) -> ConnectionSettings:
    return ConnectionSettings(url=peer.url, connect_timeout=5.0, read_timeout=20.0)


class Person:
    """Answers questions as a person would, and remembers what was asked."""

    def __init__(self, *answers: mcp_types.ElicitResult) -> None:
        self.answers = list(answers)
        self.asked: list[mcp_types.ElicitRequest] = []

    async def __call__(self, request: mcp_types.ElicitRequest) -> mcp_types.ElicitResult:
        self.asked.append(request)
        return self.answers.pop(0)


def accept(**content: Any) -> mcp_types.ElicitResult:
    return mcp_types.ElicitResult(action="accept", content=content or None)


def text(result: mcp_types.CallToolResult) -> str:
    return " ".join(b.text for b in result.content if isinstance(b, mcp_types.TextContent))


def closed_all(peer: Mcp1Peer, before: dict[str, Any], opened: int) -> None:
    after = peer.sessions()
    assert after["opened"] - before["opened"] == opened
    assert after["closed"] - before["closed"] == opened
    assert after["active"] == before["active"]


async def test_negotiates_the_newest_version_and_closes_its_session(mcp1_peer: Mcp1Peer) -> None:
    before = mcp1_peer.sessions()
    async with HandshakeClient(settings(mcp1_peer)) as client:
        result = await client.open()
        assert result.protocol_version == "2025-11-25"
        assert result.server_info.name == "mrtrweb-mcp1-peer"
        assert client.session_id
        session = client.session_id
        assert mcp1_peer.sessions()["active"] == before["active"] + 1
    assert session in {r["session"] for r in mcp1_peer.requests() if r["http"] == "DELETE"}
    closed_all(mcp1_peer, before, 1)


async def test_falls_back_to_2025_06_18_when_that_is_what_it_offers(mcp1_peer: Mcp1Peer) -> None:
    async with HandshakeClient(settings(mcp1_peer), versions=("2025-06-18",)) as client:
        assert (await client.open()).protocol_version == "2025-06-18"
        await client.list_tools()
    last_list = [r for r in mcp1_peer.requests() if r["rpc"] == "tools/list"][-1]
    assert last_list["version"] == "2025-06-18"


async def test_a_version_it_does_not_speak_is_refused_and_the_session_closed(
    mcp1_peer: Mcp1Peer,
) -> None:
    before = mcp1_peer.sessions()
    async with HandshakeClient(settings(mcp1_peer), versions=("2024-01-01",)) as client:
        with pytest.raises(UnsupportedHandshakeVersion):
            await client.open()
    closed_all(mcp1_peer, before, 1)


async def test_every_request_after_initialize_names_the_session_and_version(
    mcp1_peer: Mcp1Peer,
) -> None:
    seen = len(mcp1_peer.requests())
    async with HandshakeClient(settings(mcp1_peer)) as client:
        await client.list_tools()
        await client.call_tool("echo", {"text": "hi"})
        session = client.session_id
    requests = mcp1_peer.requests()[seen:]
    assert [r["rpc"] for r in requests if r["http"] == "POST"] == [
        "initialize",
        "notifications/initialized",
        "tools/list",
        "tools/call",
    ]
    assert requests[0]["session"] is None and requests[0]["version"] is None
    for request in requests[1:]:
        assert request["session"] == session, request
        assert request["version"] == "2025-11-25", request


async def test_plain_tool_prompt_and_resource_parse_as_for_2026(mcp1_peer: Mcp1Peer) -> None:
    before = mcp1_peer.sessions()
    async with HandshakeClient(settings(mcp1_peer)) as client:
        tools = await client.list_tools()
        assert "echo" in [t.name for t in tools.items]
        assert all(isinstance(t, mcp_types.Tool) for t in tools.items)
        result = await client.call_tool("echo", '{"text":"héllo"}')
        assert isinstance(result, mcp_types.CallToolResult)
        assert text(result) == "echo: héllo" and not result.is_error
        prompt = await client.get_prompt("greet", {"name": "Ada"})
        assert isinstance(prompt, mcp_types.GetPromptResult)
        assert "Ada" in prompt.messages[0].content.text
        resource = await client.read_resource("peer://readme")
        assert resource.contents[0].text == "the mcp 1.x peer"
        assert [p.name for p in (await client.list_prompts()).items] == ["greet"]
        assert [str(r.uri) for r in (await client.list_resources()).items] == ["peer://readme"]
    closed_all(mcp1_peer, before, 1)


async def test_a_tool_that_asks_twice_gets_both_answers(mcp1_peer: Mcp1Peer) -> None:
    person = Person(accept(name="Bo"), accept(color="green"))
    async with HandshakeClient(settings(mcp1_peer), on_elicit=person) as client:
        result = await client.call_tool("ask_twice", {})
    assert text(result) == "Bo likes green"
    assert [r.params.message for r in person.asked] == [
        "What is your name?",
        "Hello Bo: your favourite colour?",
    ]
    assert all(isinstance(r.params, mcp_types.ElicitRequestFormParams) for r in person.asked)


@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_decline_and_cancel_reach_the_tool(mcp1_peer: Mcp1Peer, action: str) -> None:
    person = Person(mcp_types.ElicitResult(action=action))
    async with HandshakeClient(settings(mcp1_peer), on_elicit=person) as client:
        result = await client.call_tool("ask_twice", {})
    assert text(result) == f"stopped at name: {action}"


async def test_a_url_question_reaches_the_callback_unfetched(mcp1_peer: Mcp1Peer) -> None:
    person = Person(mcp_types.ElicitResult(action="accept"))
    async with HandshakeClient(settings(mcp1_peer), on_elicit=person) as client:
        result = await client.call_tool("url_question", {})
    assert text(result) == "url: accept"
    (asked,) = person.asked
    assert isinstance(asked.params, mcp_types.ElicitRequestURLParams)
    assert asked.params.url == f"{mcp1_peer.base_url}/authorize?ref=mcp1"


async def test_the_session_declares_elicitation_only_with_someone_to_answer(
    mcp1_peer: Mcp1Peer,
) -> None:
    client = HandshakeClient(settings(mcp1_peer))
    assert client._capabilities() == {}
    answering = HandshakeClient(settings(mcp1_peer), on_elicit=Person())
    assert answering._capabilities() == {"elicitation": {"form": {}, "url": {}}}
    await client.aclose()
    await answering.aclose()


async def test_ping_is_answered(mcp1_peer: Mcp1Peer) -> None:
    async with HandshakeClient(settings(mcp1_peer)) as client:
        assert text(await client.call_tool("ping_client", {})) == "pong"


@pytest.mark.parametrize("tool,expected", [("ask_sampling", "sampling"), ("ask_roots", "roots")])
async def test_undeclared_requests_are_refused_at_once(
    mcp1_peer: Mcp1Peer, tool: str, expected: str
) -> None:
    # Without an answer the tool would wait for ever; -32601 lets it go on.
    async with HandshakeClient(settings(mcp1_peer), on_elicit=Person()) as client:
        result = await client.call_tool(tool, {})
    assert text(result) == f"{expected} refused: -32601"


async def test_a_forgotten_session_is_replaced_and_the_request_sent_again(
    mcp1_peer: Mcp1Peer,
) -> None:
    before = mcp1_peer.sessions()
    async with HandshakeClient(settings(mcp1_peer)) as client:
        await client.open()
        first = client.session_id
        assert first
        # The server ends the session behind the client's back (as an idle timeout would).
        async with httpx.AsyncClient() as http:
            gone = await http.delete(mcp1_peer.url, headers={"mcp-session-id": first})
        gone.raise_for_status()
        assert text(await client.call_tool("echo", {"text": "again"})) == "echo: again"
        assert client.session_id not in (None, first)
    closed_all(mcp1_peer, before, 2)


async def test_a_restarted_server_gets_a_new_session(mcp1_factory: Any) -> None:
    peer = mcp1_factory()
    async with HandshakeClient(settings(peer)) as client:
        assert text(await client.call_tool("echo", {"text": "one"})) == "echo: one"
        first = client.session_id
        peer.stop()
        restarted = mcp1_factory(port=peer.port)
        assert text(await client.call_tool("echo", {"text": "two"})) == "echo: two"
        assert client.session_id != first
    assert restarted.sessions() == {"opened": 1, "closed": 1, "active": 0, "open_ids": []}


async def test_a_stateless_server_has_no_session_to_close(mcp1_stateless_peer: Mcp1Peer) -> None:
    seen = len(mcp1_stateless_peer.requests())
    async with HandshakeClient(settings(mcp1_stateless_peer)) as client:
        assert text(await client.call_tool("echo", {"text": "hi"})) == "echo: hi"
        assert client.session_id is None
        assert "echo" in [t.name for t in (await client.list_tools()).items]
    requests = mcp1_stateless_peer.requests()[seen:]
    assert "DELETE" not in [r["http"] for r in requests]
    assert mcp1_stateless_peer.sessions()["opened"] == 0


class SlowPerson(Person):
    """Takes ``seconds`` over each answer."""

    def __init__(self, seconds: float, *answers: mcp_types.ElicitResult) -> None:
        super().__init__(*answers)
        self.seconds = seconds

    async def __call__(self, request: mcp_types.ElicitRequest) -> mcp_types.ElicitResult:
        await asyncio.sleep(self.seconds)
        return await super().__call__(request)


async def test_a_person_may_take_longer_than_the_answer_deadline(mcp1_peer: Mcp1Peer) -> None:
    # The answer deadline (0.5 s, capped at 1 s) is held while a question is out: the server
    # waits on a person, not the other way round.
    quick = ConnectionSettings(url=mcp1_peer.url, answer_deadline=0.5, answer_deadline_max=1.0)
    person = SlowPerson(0.7, accept(name="Bo"), accept(color="red"))
    async with HandshakeClient(quick, on_elicit=person) as client:
        assert text(await client.call_tool("ask_twice", {})) == "Bo likes red"


async def test_a_question_left_unanswered_past_its_deadline_is_cancelled(
    mcp1_peer: Mcp1Peer,
) -> None:
    person = SlowPerson(5.0, accept(name="never"))
    async with HandshakeClient(
        settings(mcp1_peer), on_elicit=person, question_deadline=0.3
    ) as client:
        assert text(await client.call_tool("ask_twice", {})) == "stopped at name: cancel"


class Renewing:
    """An authenticator (the mcp.Authenticator protocol) whose first token is stale."""

    def __init__(self, stale: str, fresh: str) -> None:
        self.token = stale
        self.fresh = fresh
        self.challenges: list[int] = []

    async def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    async def challenged(self, http_status: int, www_authenticate: str | None) -> bool:
        self.challenges.append(http_status)
        self.token = self.fresh
        return True


async def test_credentials_are_renewed_once_and_sent_on_every_request(mcp1_factory: Any) -> None:
    peer = mcp1_factory("--token", "fresh")
    authenticator = Renewing("stale", "fresh")
    locked = dataclasses.replace(settings(peer), authenticator=authenticator)
    async with HandshakeClient(locked) as client:
        assert text(await client.call_tool("echo", {"text": "in"})) == "echo: in"
    assert authenticator.challenges == [401]
    # The DELETE carried the token too: the session is closed, not left behind.
    assert peer.sessions() == {"opened": 1, "closed": 1, "active": 0, "open_ids": []}


async def test_refused_credentials_that_cannot_be_renewed_raise(mcp1_factory: Any) -> None:
    peer = mcp1_factory("--token", "right")
    authenticator = Renewing("wrong", "still-wrong")
    locked = dataclasses.replace(settings(peer), authenticator=authenticator)
    async with HandshakeClient(locked) as client:
        with pytest.raises(AuthorizationRequired):
            await client.call_tool("echo", {"text": "x"})
    assert authenticator.challenges == [401]


async def test_a_stream_the_server_closes_is_resumed_with_last_event_id(
    mcp1_factory: Any,
) -> None:
    peer = mcp1_factory("--resumable")
    async with HandshakeClient(settings(peer)) as client:
        result = await client.call_tool("reconnect", {})
        session = client.session_id
    assert text(result) == "answered after the stream broke"
    resumed = [r for r in peer.requests() if r["http"] == "GET" and r["last_event_id"]]
    assert len(resumed) == 1
    assert resumed[0]["session"] == session and resumed[0]["version"] == "2025-11-25"
