"""The SSE reader: events split anywhere across chunks, every line ending, in linear time.

A unit test of the line reader alone, over an in-memory stream of chunks; what real servers
send through it is covered against the peers (test_client.py, test_faults.py).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import httpx
import pytest

from mrtrweb.mcp import ResponseTooLarge
from mrtrweb.mcp.body import sse_data

STREAM = (
    b": keep-alive\r\n"
    b'event: message\r\ndata: {"a": 1}\r\n\r\n'
    b"data: first\rdata: second\r\r"
    b"event: other\ndata: skipped\n\n"
    b"data: last\n\n"
)
EVENTS = ['{"a": 1}', "first\nsecond", "last"]


def response(chunks: list[bytes]) -> httpx.Response:
    async def stream() -> AsyncIterator[bytes]:
        for chunk in chunks:
            yield chunk

    return httpx.Response(200, content=stream())


async def events(chunks: list[bytes], limit: int = 10_000_000) -> list[str]:
    return [data async for data in sse_data(response(chunks), limit)]


async def test_one_chunk() -> None:
    assert await events([STREAM]) == EVENTS


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7])
async def test_split_into_chunks_of_any_size(size: int) -> None:
    chunks = [STREAM[i : i + size] for i in range(0, len(STREAM), size)]
    assert await events(chunks) == EVENTS


async def test_a_crlf_split_between_two_chunks_is_one_line_end() -> None:
    assert await events([b"data: x\r", b"\ndata: y\r", b"\n\r", b"\n"]) == ["x\ny"]


async def test_a_huge_line_is_read_in_linear_time() -> None:
    # 40 MB in one line, 64 KB at a time: scanned and copied whole for every chunk that
    # arrived, this took 16 s (0.3 s now).
    line = b"data: " + b"A" * 40_000_000
    chunks = [line[i : i + 65536] for i in range(0, len(line), 65536)] + [b"\n\n"]
    began = time.monotonic()
    assert await events(chunks, limit=50_000_000) == ["A" * 40_000_000]
    assert time.monotonic() - began < 2.5


async def test_a_stream_over_the_limit_is_refused() -> None:
    with pytest.raises(ResponseTooLarge):
        await events([b"data: " + b"A" * 100, b"\n\n"], limit=50)


async def test_a_stream_closed_after_a_complete_line_still_delivers_its_event() -> None:
    assert await events([b"data: one\n\n", b"data: two\n"]) == ["one", "two"]


async def test_a_line_cut_off_by_the_close_is_never_data() -> None:
    assert await events([b"data: one\n\n", b'data: {"trunc']) == ["one"]


async def test_events_without_data_or_of_another_type_are_skipped() -> None:
    chunks = [
        b"id: 7\n\nretry: 10\n\n: ping\n\nevent: other\ndata: x\n\nevent: message\ndata: y\n\n"
    ]
    assert await events(chunks) == ["y"]


async def test_data_is_utf_8_whatever_the_content_type_says() -> None:
    async def stream() -> AsyncIterator[bytes]:
        yield "data: é\n\n".encode()

    latin = httpx.Response(
        200, headers={"content-type": "text/event-stream; charset=latin-1"}, content=stream()
    )
    assert [data async for data in sse_data(latin, 1000)] == ["é"]


async def test_a_priming_event_is_no_message_but_its_id_and_retry_are_kept() -> None:
    from mrtrweb.mcp.body import sse_events

    chunks = [b"id: event-1\nretry: 500\ndata: \n\n", b'event: message\ndata: {"a": 1}\n\n']
    seen = [e async for e in sse_events(response(chunks), 10_000)]
    # (Past the last event, only empty non-messages: the reader's end-of-stream line.)
    assert not any(e.is_message for e in seen[2:])
    assert [(e.data, e.last_event_id, e.retry, e.is_message) for e in seen[:2]] == [
        ("", "event-1", 500, False),
        ('{"a": 1}', "event-1", None, True),
    ]
    assert await events(chunks) == ['{"a": 1}']
