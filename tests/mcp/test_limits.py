"""What the client refuses to read: JSON nested too deep (plain or as an SSE event), from a real
server that sends it, and the depth scanner behind it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mrtrweb.mcp import ConnectionSettings, MCPClient, ProtocolError, TooDeeplyNested, forget_era
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
