"""Reading a response body within the connection's size limit, as JSON bytes or SSE events.

The event-stream rules (line endings, comments, fields, dispatch) are httpx-sse's; this
module only feeds it bytes counted against the limit and keeps the events a JSON-RPC client
reads: those of type ``message`` that carry data.

A handshake-era server may open a stream with a *priming* event (an ``id:``, a ``retry:`` and
empty data) and close it before the answer, for the client to resume with ``Last-Event-ID``
after ``retry`` milliseconds (SEP-1699): :func:`sse_events` reports every event's id and retry
so the transport can; an event with empty data is never handed on as a message.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass

import httpx
from httpx_sse import EventSource

from .errors import ResponseTooLarge

__all__ = ["SSEEvent", "limited_chunks", "read_body", "sse_data", "sse_events"]


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


@dataclass(frozen=True, slots=True)
class SSEEvent:
    """One dispatched event: its data ("" for a priming event or a bare ``id:``/``retry:``),
    the last event id seen on the stream so far, and the ``retry`` it set (milliseconds)."""

    data: str
    last_event_id: str | None
    retry: int | None
    is_message: bool


async def sse_events(response: httpx.Response, limit: int) -> AsyncGenerator[SSEEvent, None]:
    """Every event of an SSE body, within ``limit`` bytes (see :func:`sse_data`)."""
    # httpx-sse reads an httpx.Response: this one streams the limited bytes of the real one.
    limited = httpx.Response(
        response.status_code,
        headers={"content-type": "text/event-stream; charset=utf-8"},
        content=_ended_events(response, limit),
    )
    events = EventSource(limited).aiter_sse()
    last_id: str | None = None
    try:
        async for event in events:
            # httpx-sse keeps the last id across events, as the event-stream format says; an
            # empty id resets it (the server says there is nothing to resume from).
            last_id = event.id or None
            yield SSEEvent(
                event.data,
                last_id,
                event.retry,
                event.event == "message" and event.data != "",
            )
    finally:
        await events.aclose()


async def sse_data(response: httpx.Response, limit: int) -> AsyncIterator[str]:
    """Yield the data of each ``message`` event of an SSE body, within ``limit`` bytes.

    Events are decoded as UTF-8 whatever charset the Content-Type names (the event-stream
    format is always UTF-8); events of another type, and events without data (a comment, a
    priming event, a bare ``id:`` or ``retry:``), are skipped.
    """
    async with aclosing(sse_events(response, limit)) as events:
        async for event in events:
            if event.is_message:
                yield event.data
