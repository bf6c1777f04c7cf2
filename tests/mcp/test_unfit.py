"""Answers that parse but cannot be kept: NaN, infinities and lone surrogates are refused.

Against the hostile peer (tests/peers/hostile.py), whose attacks send them for real.
"""

from __future__ import annotations

from typing import Any

import httpx
import mcp_types
import pytest

from mrtrweb.mcp import ConnectionSettings, MCPClient, ProtocolError
from mrtrweb.mcp.unfit import unfit


def client_for(peer: Any, attack: str) -> MCPClient:
    return MCPClient(ConnectionSettings(url=f"{peer.base_url}/a/{attack}/mcp", read_timeout=10))


@pytest.mark.parametrize(
    ("attack", "why"),
    [
        ("nan-infinity", "not finite"),
        ("lone-surrogates", "not valid Unicode"),
        ("surrogate-state", "not valid Unicode"),
    ],
)
async def test_an_answer_that_cannot_be_kept_is_a_protocol_error(
    hostile_peer: Any, attack: str, why: str
) -> None:
    async with client_for(hostile_peer, attack) as client:
        with pytest.raises(ProtocolError, match=why):
            await client.call_tool("attack", {})


async def test_unfit_notifications_are_dropped_and_the_call_goes_on(hostile_peer: Any) -> None:
    heard: list[Any] = []
    async with client_for(hostile_peer, "unfit-progress") as client:
        result = await client.call_tool("attack", {}, on_notification=heard.append)
    assert isinstance(result, mcp_types.CallToolResult)
    assert result.content[0].text == "sound result"  # type: ignore[union-attr]
    # NaN progress, a lone surrogate, an infinite total: none of the three gets through.
    assert heard == []


@pytest.mark.parametrize(
    ("value", "fit"),
    [
        ({"a": [1, 2.5, "ok", None, True, {"é": "ü😀"}]}, True),
        ({"a": float("nan")}, False),
        ([float("-inf")], False),
        ({"k\ud800": 1}, False),
        ("x\udfff", False),
        # Nested far deeper than recursion allows: still looked over, without recursing.
        ([[["deep"]]] * 2, True),
    ],
)
def test_unfit_names_what_cannot_be_kept(value: Any, fit: bool) -> None:
    assert (unfit(value) is None) is fit


def test_unfit_does_not_recurse() -> None:
    value: Any = "\ud800"
    for _ in range(100_000):
        value = [value]
    assert unfit(value) is not None


async def test_a_listing_that_never_ends_is_refused_after_a_hundred_pages(
    hostile_peer: Any,
) -> None:
    seen = f"{hostile_peer.base_url}/_hostile/seen/endless-pages"
    async with (
        httpx.AsyncClient(timeout=5) as peer,
        client_for(hostile_peer, "endless-pages") as client,
    ):
        await peer.delete(seen)
        with pytest.raises(ProtocolError, match="more than 100 pages"):
            await client.list_tools(use_cache=False)
        listed = [e for e in (await peer.get(seen)).json() if e["rpc_method"] == "tools/list"]
    assert len(listed) == 100
