"""The client against servers that misbehave: each fault maps to the error a caller can act on.

Every peer runs in a process of its own (``fastmcp_process_peer`` too), as for every test of
the client itself."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from mrtrweb.mcp import (
    AuthenticationRequired,
    ConnectionSettings,
    LegacyServer,
    MCPClient,
    NotDelivered,
    OutcomeUnknown,
    ProtocolError,
    ResponseTooLarge,
    UnsupportedProtocolVersion,
    forget_era,
)

pytestmark = pytest.mark.asyncio


def client_for(url: str, **settings: Any) -> MCPClient:
    forget_era(url)
    return MCPClient(ConnectionSettings(url=url, **settings))


def unused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def test_a_refused_connection_is_not_delivered() -> None:
    async with client_for(f"http://127.0.0.1:{unused_port()}/mcp") as client:
        with pytest.raises(NotDelivered):
            await client.call_tool("echo", {"text": "x"})


@pytest.mark.parametrize("mode", ["drop", "drop-json", "sse-no-result", "close"])
async def test_a_broken_answer_leaves_the_outcome_unknown(mode: str, fault_peer: Any) -> None:
    async with client_for(fault_peer(mode).url) as client:
        with pytest.raises(OutcomeUnknown):
            await client.call_tool("echo", {"text": "x"})


@pytest.mark.parametrize("mode", ["stall", "stall-sse"])
async def test_a_stalled_server_times_out_with_the_outcome_unknown(
    mode: str, fault_peer: Any
) -> None:
    async with client_for(fault_peer(mode).url, read_timeout=0.5) as client:
        with pytest.raises(OutcomeUnknown):
            await client.call_tool("echo", {"text": "x"})


@pytest.mark.parametrize("mode", ["garbage", "wrong-content-type", "not-jsonrpc", "bad-sse"])
async def test_garbage_is_a_protocol_error(mode: str, fault_peer: Any) -> None:
    async with client_for(fault_peer(mode).url) as client:
        with pytest.raises(ProtocolError):
            await client.call_tool("echo", {"text": "x"})


@pytest.mark.parametrize("mode", ["huge", "huge-chunked", "huge-sse"])
async def test_a_response_over_the_limit_is_refused_unread(mode: str, fault_peer: Any) -> None:
    async with client_for(fault_peer(mode).url) as client:
        with pytest.raises(ResponseTooLarge):
            await client.call_tool("echo", {"text": "x"})


async def test_the_limit_is_per_connection(fault_peer: Any) -> None:
    async with client_for(fault_peer("huge").url, max_response_bytes=50_000_000) as client:
        result = await client.call_tool("echo", {"text": "x"})
    assert len(result.content[0].text) > 10_000_000


async def test_an_unsupported_version_names_what_the_server_speaks(fault_peer: Any) -> None:
    async with client_for(fault_peer("unsupported-version").url) as client:
        with pytest.raises(UnsupportedProtocolVersion) as caught:
            await client.list_tools()
    assert caught.value.supported
    assert "2026-07-28" not in caught.value.supported


async def test_credentials_problems_are_not_mistaken_for_the_era(fault_peer: Any) -> None:
    peer = fault_peer("auth")
    async with client_for(peer.url) as client:
        with pytest.raises(AuthenticationRequired) as caught:
            await client.detect_era()
    assert caught.value.http_status == 401
    assert caught.value.www_authenticate and "Bearer" in caught.value.www_authenticate


@pytest.mark.parametrize("mode", ["legacy", "legacy-stateless", "legacy-32022"])
async def test_a_handshake_era_server_is_recognised_with_a_clear_message(
    mode: str, fault_peer: Any
) -> None:
    peer = fault_peer(mode)
    async with client_for(peer.url) as client:
        assert await client.detect_era() == "legacy"
        with pytest.raises(LegacyServer) as caught:
            await client.ensure_modern()
    message = str(caught.value)
    assert "handshake-era" in message and "2025" in message
    # Every operation reports it the same way, not as a bare HTTP error.
    async with client_for(peer.url) as client:
        with pytest.raises(LegacyServer):
            await client.list_tools()


async def test_modern_servers_are_recognised(fastmcp_process_peer: Any, sdk_peer: Any) -> None:
    for peer in (fastmcp_process_peer, sdk_peer):
        async with client_for(peer.url) as client:
            assert await client.detect_era() == "modern"
