"""Reading a response body within the connection's size limit, as JSON bytes or SSE events.

The event-stream rules (line endings, comments, fields, dispatch) are httpx-sse's; this
module only feeds it bytes counted against the limit and keeps the events a JSON-RPC client
reads: those of type ``message`` that carry data.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
from httpx_sse import EventSource

from .errors import ResponseTooLarge

__all__ = ["limited_chunks", "read_body", "sse_data"]


async def limited_chunks(response: httpx.Response, limit: int) -> AsyncIterator[bytes]:
    """The (decoded) body in chunks, raising :class:`ResponseTooLarge` past ``limit`` bytes."""
    declared = response.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise ResponseTooLarge(limit)
    seen = 0
    async for chunk in response.aiter_bytes():
        seen += len(chunk)
        if seen > limit:
            raise ResponseTooLarge(limit)
        yield chunk


async def read_body(response: httpx.Response, limit: int) -> bytes:
    return b"".join([chunk async for chunk in limited_chunks(response, limit)])


async def _ended_events(response: httpx.Response, limit: int) -> AsyncIterator[bytes]:
    # A stream that closes right after a complete line still delivers the event those lines
    # made, as mrtrweb always has; a line cut off by the close is never read as data.
    last = b""
    async for chunk in limited_chunks(response, limit):
        last = chunk[-1:]
        yield chunk
    if last == b"\n":
        yield b"\n"


async def sse_data(response: httpx.Response, limit: int) -> AsyncIterator[str]:
    """Yield the data of each ``message`` event of an SSE body, within ``limit`` bytes.

    Events are decoded as UTF-8 whatever charset the Content-Type names (the event-stream
    format is always UTF-8); events of another type, and events without data (a comment, a
    bare ``id:`` or ``retry:``), are skipped.
    """
    # httpx-sse reads an httpx.Response: this one streams the limited bytes of the real one.
    limited = httpx.Response(
        response.status_code,
        headers={"content-type": "text/event-stream; charset=utf-8"},
        content=_ended_events(response, limit),
    )
    events = EventSource(limited).aiter_sse()
    try:
        async for event in events:
            if event.event == "message" and event.data != "":
                yield event.data
    finally:
        await events.aclose()
