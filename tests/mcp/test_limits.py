"""What the client refuses to read: JSON nested too deep (plain or as an SSE event), from a real
server that sends it, and the depth scanner behind it."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from mrtrweb.mcp import (
    ConnectionSettings,
    DeadlineExceeded,
    MCPClient,
    OutcomeUnknown,
    ProtocolError,
    Redirected,
    TooDeeplyNested,
    forget_era,
)
from mrtrweb.mcp.jsonparse import json_depth, loads


def test_the_depth_is_counted_outside_strings() -> None:
    assert json_depth("1") == json_depth('"[[[{{"') == 0
    assert json_depth("[]") == json_depth(b"{}") == 1
    assert json_depth('{"a": [1, {"b": "]]]}}"}], "c": "\\"[["}') == 3
    assert json_depth('["\\\\", [["\\\\\\"]"]]]') == 3
    assert json_depth("[" * 100_000 + "]" * 100_000) == 100_000


def test_a_limit_refuses_deeper_and_parses_up_to_it() -> None:
    assert loads("[" * 64 + "]" * 64) == json.loads("[" * 64 + "]" * 64)
    with pytest.raises(TooDeeplyNested) as caught:
        loads("[" * 65 + "]" * 65)
    assert caught.value.limit == 64
    assert "nested more than 64 levels deep" in str(caught.value)
    # The test the issue failed: no RecursionError, however deep.
    with pytest.raises(TooDeeplyNested):
        loads(b"[" * 100_000 + b"]" * 100_000)
    with pytest.raises(TooDeeplyNested):
        loads('{"a":' * 100_000 + "1" + "}" * 100_000, max_depth=1000)
    # Invalid JSON stays a ValueError, as json.loads has it.
    with pytest.raises(ValueError):
        loads("[1,")


def call_deep(url: str, depth: int, sse: bool, **settings: Any) -> Any:
    import asyncio

    async def go() -> Any:
        forget_era(url)
        async with MCPClient(ConnectionSettings(url=url, **settings)) as client:
            return await client.call_tool("deep", {"depth": depth, "sse": sse})

    return asyncio.run(go())


@pytest.mark.parametrize("sse", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("depth", [100_000, 950, 62])
def test_a_deep_answer_is_refused_with_a_clear_error(limits_peer: Any, depth: int, sse: bool):
    with pytest.raises(TooDeeplyNested) as caught:
        call_deep(limits_peer.url, depth, sse)
    # A protocol error: what the engine already handles (failed first request, unknown round).
    assert isinstance(caught.value, ProtocolError)
    assert "64 levels" in str(caught.value)


@pytest.mark.parametrize("sse", [False, True], ids=["json", "sse"])
def test_an_answer_within_the_limit_is_read(limits_peer: Any, sse: bool) -> None:
    # The message nests the array three deep (message, result, structuredContent).
    result = call_deep(limits_peer.url, 61, sse)
    node, levels = result.structured_content["deep"], 1
    while node:
        node, levels = node[0], levels + 1
    assert levels == 61


def test_the_limit_is_a_setting(limits_peer: Any) -> None:
    result = call_deep(limits_peer.url, 200, False, max_json_depth=250)
    assert result.structured_content["deep"]


# -- the answer deadline: across the whole response, not per chunk ---------------------------


def call_streaming(url: str, tool: str, arguments: dict[str, Any], **settings: Any) -> Any:
    """Call ``tool``; the result (or the exception), the seconds it took, the progress heard."""
    import asyncio
    import time

    heard: list[Any] = []

    async def go() -> Any:
        forget_era(url)
        # The per-chunk read timeout is far away: only the deadline can stop these streams.
        config = ConnectionSettings(url=url, read_timeout=30.0, **settings)
        async with MCPClient(config) as client:
            return await client.call_tool(tool, arguments, on_notification=heard.append)

    started = time.monotonic()
    try:
        outcome: Any = asyncio.run(go())
    except Exception as exc:  # the test looks at what was raised
        outcome = exc
    return outcome, time.monotonic() - started, heard


def test_keepalives_do_not_hold_a_request_past_the_deadline(limits_peer: Any) -> None:
    outcome, took, _ = call_streaming(
        limits_peer.url, "keepalive", {"every": 0.5}, answer_deadline=2.0, answer_deadline_max=10.0
    )
    assert isinstance(outcome, DeadlineExceeded), outcome
    # Outcome unknown: the server may have acted (a resubmission is flagged, not resent).
    assert isinstance(outcome, OutcomeUnknown)
    assert str(outcome) == "The server did not answer within 2 s"
    # Timed loosely (a loaded machine is slow), but far from the cap and from "forever".
    assert 1.9 <= took < 6, took
    # Closing the stream is the cancellation, and the server saw it.
    wait_for_output(limits_peer, "stream ended: client left after")


def test_progress_extends_the_deadline_until_the_answer(limits_peer: Any) -> None:
    outcome, took, heard = call_streaming(
        limits_peer.url,
        "progress",
        {"every": 0.5, "finish_after": 3},
        answer_deadline=2.0,
        answer_deadline_max=10.0,
    )
    assert not isinstance(outcome, Exception), outcome
    assert outcome.content[0].text.startswith("finished after 3")
    assert 3.0 <= took < 8 and len(heard) >= 5


def test_progress_forever_is_stopped_at_the_cap(limits_peer: Any) -> None:
    outcome, took, heard = call_streaming(
        limits_peer.url, "progress", {"every": 0.5}, answer_deadline=1.0, answer_deadline_max=3.0
    )
    assert isinstance(outcome, DeadlineExceeded), outcome
    assert "did not finish within 3 s" in str(outcome) and outcome.seconds == 3.0
    assert 2.9 <= took < 7, took
    assert len(heard) >= 4


def test_progress_that_stops_leaves_the_deadline_after_the_last_one(limits_peer: Any) -> None:
    # Progress every 1.5 s against a 1 s deadline: the first gap already runs it out.
    outcome, took, heard = call_streaming(
        limits_peer.url, "progress", {"every": 1.5}, answer_deadline=1.0, answer_deadline_max=9.0
    )
    assert isinstance(outcome, DeadlineExceeded), outcome
    assert "within 1 s of its last progress notification" in str(outcome)
    assert 0.9 <= took < 4 and 1 <= len(heard) <= 2


def wait_for_output(peer: Any, text: str, timeout: float = 5.0) -> None:
    import time

    deadline = time.monotonic() + timeout
    while text not in peer.output():
        assert time.monotonic() < deadline, peer.output()[-2000:]
        time.sleep(0.05)


# -- redirects -------------------------------------------------------------------------------


def test_a_redirect_says_where_to_and_is_not_followed(limits_peer: Any) -> None:
    import asyncio

    elsewhere = limits_peer.base_url + "/elsewhere"

    async def go() -> Any:
        async with MCPClient(ConnectionSettings(url=limits_peer.url)) as client:
            return await client.call_tool("redirect", {"location": elsewhere})

    with pytest.raises(Redirected) as caught:
        asyncio.run(go())
    assert str(caught.value) == (
        f"The server redirected to {elsewhere}; redirects are not followed (HTTP 307)"
    )
    assert (caught.value.http_status, caught.value.location) == (307, elsewhere)
    assert not isinstance(caught.value, ProtocolError)


def test_a_server_that_redirects_everything_is_not_taken_for_a_legacy_one(
    peer_factory: Any,
) -> None:
    import asyncio

    peer = peer_factory("limits_server", "--redirect-all", "https://moved.example/mcp")

    async def go() -> Any:
        forget_era(peer.url)
        async with MCPClient(ConnectionSettings(url=peer.url)) as client:
            return await client.list_tools()

    with pytest.raises(Redirected, match=re.escape("redirected to https://moved.example/mcp")):
        asyncio.run(go())
