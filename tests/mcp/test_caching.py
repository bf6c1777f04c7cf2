"""Listings are cached for the server's ttlMs, shared only when its cacheScope is public.

Against the fastmcp peer in a process of its own, as every test of the client itself."""

from __future__ import annotations

from typing import Any

import pytest

from mrtrweb.mcp import ConnectionSettings, MCPClient

pytestmark = pytest.mark.asyncio


def list_requests(peer: Any, since: int) -> int:
    return sum(1 for r in peer.recorded(since) if (r["json"] or {}).get("method") == "tools/list")


async def test_a_fresh_listing_is_served_from_the_cache(peer_factory: Any) -> None:
    peer = peer_factory("fastmcp_server", "--cache-ttl", "60", "--cache-scope", "private")
    async with MCPClient(ConnectionSettings(url=peer.url)) as client:
        since = peer.mark()
        first = await client.list_tools()
        pages = list_requests(peer, since)
        assert pages > 1 and first.ttl_ms == 60_000 and first.cache_scope == "private"
        again = await client.list_tools()
        assert again.items == first.items
        assert list_requests(peer, since) == pages
        await client.list_tools(use_cache=False)
        assert list_requests(peer, since) == 2 * pages
    # Private entries belong to one authorisation context: another client asks again.
    async with MCPClient(ConnectionSettings(url=peer.url, bearer_token="other")) as other:
        since = peer.mark()
        await other.list_tools()
        assert list_requests(peer, since) == pages


async def test_public_listings_are_shared_between_clients(peer_factory: Any) -> None:
    peer = peer_factory("fastmcp_server", "--cache-ttl", "60", "--cache-scope", "public")
    async with MCPClient(ConnectionSettings(url=peer.url)) as client:
        await client.list_tools()
    since = peer.mark()
    async with MCPClient(ConnectionSettings(url=peer.url)) as other:
        listing = await other.list_tools()
    assert listing.cache_scope == "public"
    assert list_requests(peer, since) == 0


async def test_a_zero_ttl_is_never_cached(fastmcp_process_peer: Any) -> None:
    async with MCPClient(ConnectionSettings(url=fastmcp_process_peer.url)) as client:
        since = fastmcp_process_peer.mark()
        first = await client.list_tools()
        pages = list_requests(fastmcp_process_peer, since)
        await client.list_tools()
    assert first.ttl_ms == 0
    assert list_requests(fastmcp_process_peer, since) == 2 * pages
