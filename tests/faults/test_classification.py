"""How the MCP client classifies a failed exchange, against real misbehaving servers.

*Not delivered* (safe to resend): refused connection, 429 and 503 (with their Retry-After).
*Outcome unknown* (the server may have acted): stalls, broken streams, 500/502/504 without a
JSON-RPC error. Garbage is a ``ProtocolError``, which the engine also treats as unknown.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mrtrweb.mcp import (
    ConnectionSettings,
    MCPClient,
    NotDelivered,
    OutcomeUnknown,
    ProtocolError,
    ServerBusy,
)
from mrtrweb.mcp.retry_after import retry_after_seconds
from tests.peers.fixtures import free_port


def call(url: str) -> None:
    async def go() -> None:
        settings = ConnectionSettings(url=url, connect_timeout=1.0, read_timeout=1.0)
        async with MCPClient(settings) as client:
            await client.call_tool("echo", '{"text": "hi"}')

    asyncio.run(go())


def test_a_closed_port_is_not_delivered() -> None:
    with pytest.raises(NotDelivered) as caught:
        call(f"http://127.0.0.1:{free_port()}/mcp")
    assert not isinstance(caught.value, ServerBusy)
    assert caught.value.http_status is None


@pytest.mark.parametrize(
    ("mode", "status", "wait"), [("http-429", 429, 7.0), ("http-503", 503, None)]
)
def test_busy_answers_are_not_delivered_with_their_retry_after(
    fault_peer: Any, mode: str, status: int, wait: float | None
) -> None:
    with pytest.raises(ServerBusy) as caught:
        call(fault_peer(mode).url)
    assert isinstance(caught.value, NotDelivered)
    assert caught.value.http_status == status
    if wait is not None:
        assert caught.value.retry_after == wait
    else:  # an HTTP-date far in the future: capped at a day
        assert caught.value.retry_after == 24 * 3600.0


@pytest.mark.parametrize("mode", ["http-500", "http-502", "http-504"])
def test_server_failures_without_a_jsonrpc_error_are_outcome_unknown(
    fault_peer: Any, mode: str
) -> None:
    with pytest.raises(OutcomeUnknown) as caught:
        call(fault_peer(mode).url)
    assert caught.value.http_status == int(mode[-3:])


@pytest.mark.parametrize("mode", ["stall", "drop", "drop-json", "sse-no-result"])
def test_a_stall_or_a_broken_answer_is_outcome_unknown(fault_peer: Any, mode: str) -> None:
    with pytest.raises(OutcomeUnknown):
        call(fault_peer(mode).url)


def test_garbage_is_a_protocol_error(fault_peer: Any) -> None:
    with pytest.raises(ProtocolError):
        call(fault_peer("garbage").url)


def test_retry_after_reads_seconds_and_http_dates() -> None:
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert retry_after_seconds("120", now=now) == 120.0
    assert retry_after_seconds("Thu, 01 Jan 2026 12:00:30 GMT", now=now) == 30.0
    assert retry_after_seconds("Thu, 01 Jan 2026 11:00:00 GMT", now=now) == 0.0
    assert retry_after_seconds("soon", now=now) is None
    assert retry_after_seconds(None) is None
    assert retry_after_seconds("172800", now=now) == 24 * 3600.0  # capped at a day
    # Junk is as if absent, never an error: not ASCII digits, negative, past 2**31 seconds.
    for junk in ("\xb2", "\u0663", "-5", "1e3", "2147483649", "9" * 5000, "Mon, 32 Jan 2020"):
        assert retry_after_seconds(junk, now=now) is None, junk


@given(
    st.one_of(
        st.text(),
        st.text(alphabet=st.characters(max_codepoint=0xFF)),  # what a header decodes to
        # Characters str.isdigit() takes for digits: ASCII, superscripts, Arabic-Indic.
        st.text(alphabet=st.characters(categories=["Nd", "No"]), min_size=1),
        st.text(alphabet="0123456789\xb2\xb3\xb9\u0663", min_size=1),
        st.builds(lambda n: str(n), st.integers()),
        st.from_regex(r"[A-Z][a-z]{2}, \d{1,2} [A-Z][a-z]{2} \d{1,6} \d\d:\d\d:\d\d [+-]?\w{1,4}"),
    )
)
def test_retry_after_never_raises_and_stays_within_a_day(value: str) -> None:
    seconds = retry_after_seconds(value)
    assert seconds is None or 0.0 <= seconds <= 24 * 3600.0
