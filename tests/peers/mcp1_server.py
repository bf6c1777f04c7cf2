"""A handshake-era peer: the official MCP SDK **1.x** FastMCP (2025-11-25), as people run it.

Runs in its own venv (``var/mcp1``, ``make mcp1``): the project's venv holds mcp 2.x. Started
by ``tests.peers.mcp1.start_mcp1_peer``; by hand:
``var/mcp1/bin/python tests/peers/mcp1_server.py --port P [--stateless] [--json-response]
[--token T]`` (with a token, ``/mcp`` answers 401 without ``Authorization: Bearer T``).

Tools (``ctx.elicit`` is the SDK's server-to-client ``elicitation/create`` on the call's stream):

- ``echo(text)``: ``"echo: {text}"``, asks nothing.
- ``ask_twice()``: asks a name, then a colour; ``"{name} likes {color}"``, or
  ``"stopped at {name|color}: {action}"`` when a question is declined or cancelled.
- ``url_question()``: a URL-mode question to ``/authorize`` on this server; ``"url: {action}"``.
- ``ask_sampling()`` / ``ask_roots()``: ask for what the client never declared;
  ``"sampling refused: {code}"`` / ``"roots refused: {code}"`` when the client answers with an
  error (a client that never answers hangs the call).
- ``ping_client()``: sends ``ping`` to the client; ``"pong"``.
- ``reconnect()``: closes its own stream mid-call, then answers
  ``"answered after the stream broke"``; with ``--resumable`` (an in-memory event store,
  ``retry`` 300 ms) the answer waits to be read by a GET with ``Last-Event-ID``.
  (All of these ask on the call's own stream, as ``ctx.elicit`` does; the SDK's bare
  ``list_roots()``/``send_ping()`` would use the standalone GET stream, which mrtrweb does not
  open.)
- Prompt ``greet(name)``; resource ``peer://readme``.

Sessions are counted on loopback: ``GET /_test/sessions`` is ``{"opened", "closed", "active",
"open_ids"}``: opened = session ids issued with a 2xx answer, closed = DELETEs answered 2xx. ``GET
/_test/requests``: ``[{"http", "rpc", "session", "version", "last_event_id"}]`` for every
request to ``/mcp``. ``GET /_test/answers``: ``[{"id", "session", "action"}]`` for every
JSON-RPC response the client POSTed (its answers to questions): counts what was sent, and
how often.

Without sessions (``--stateless``) the SDK still sends a question on the call's stream, but
the answer is POSTed to a new transport that never asked it ("Received response with an
unknown request ID"): the tool waits for ever. Such a server cannot take an answer.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

import uvicorn
from mcp.server.fastmcp import Context, FastMCP
from mcp.server.streamable_http import EventMessage, EventStore
from mcp.shared.exceptions import McpError
from mcp.shared.message import ServerMessageMetadata
from mcp.types import (
    EmptyResult,
    JSONRPCMessage,
    ListRootsRequest,
    ListRootsResult,
    PingRequest,
    SamplingMessage,
    ServerRequest,
    TextContent,
)
from pydantic import BaseModel, Field


class Name(BaseModel):
    name: str = Field(description="Your name")


class Color(BaseModel):
    color: str = Field(description="Your favourite colour", default="blue")


class MemoryEventStore(EventStore):
    """Every event of every stream, so a client may resume one with Last-Event-ID (the SDK
    ships no event store; this is the one its examples show)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, JSONRPCMessage | None]] = []
        self.replays: list[str] = []

    async def store_event(self, stream_id: str, message: JSONRPCMessage | None) -> str:
        event_id = f"{stream_id}:{len(self.events)}"
        self.events.append((event_id, stream_id, message))
        return event_id

    async def replay_events_after(self, last_event_id: str, send_callback: Any) -> str | None:
        self.replays.append(last_event_id)
        ids = [e[0] for e in self.events]
        if last_event_id not in ids:
            return None
        stream_id = self.events[ids.index(last_event_id)][1]
        for event_id, stream, message in self.events[ids.index(last_event_id) + 1 :]:
            if stream == stream_id and message is not None:
                await send_callback(EventMessage(message, event_id))
        return stream_id


def build(
    port: int, *, stateless: bool, json_response: bool, events: EventStore | None = None
) -> FastMCP:
    mcp = FastMCP(
        "mrtrweb-mcp1-peer",
        host="127.0.0.1",
        port=port,
        stateless_http=stateless,
        json_response=json_response,
        event_store=events,
        retry_interval=300 if events is not None else None,
    )

    @mcp.tool()
    def echo(text: str) -> str:
        """Say the text back."""
        return f"echo: {text}"

    @mcp.tool()
    async def ask_twice(ctx: Context) -> str:
        """Ask a name, then a colour."""
        first = await ctx.elicit("What is your name?", Name)
        if first.action != "accept":
            return f"stopped at name: {first.action}"
        second = await ctx.elicit(f"Hello {first.data.name}: your favourite colour?", Color)
        if second.action != "accept":
            return f"stopped at color: {second.action}"
        return f"{first.data.name} likes {second.data.color}"

    @mcp.tool()
    async def progress_then_ask(ctx: Context) -> str:
        """Report progress (when the call asked for it), then ask a name."""
        await ctx.report_progress(1, 2, "looking things up")
        answer = await ctx.elicit("What is your name?", Name)
        if answer.action != "accept":
            return f"stopped: {answer.action}"
        await ctx.report_progress(2, 2, "done")
        return f"found {answer.data.name}"

    @mcp.tool()
    async def url_question(ctx: Context) -> str:
        """Send the person to a page of this server."""
        result = await ctx.elicit_url(
            "Sign in to continue", f"http://127.0.0.1:{port}/authorize?ref=mcp1", "mcp1-login"
        )
        return f"url: {result.action}"

    @mcp.tool()
    async def ask_sampling(ctx: Context) -> str:
        """Ask the client's model (sampling), which it never declared."""
        try:
            await ctx.session.create_message(
                [SamplingMessage(role="user", content=TextContent(type="text", text="hi"))],
                max_tokens=10,
                related_request_id=ctx.request_id,
            )
        except McpError as exc:
            return f"sampling refused: {exc.error.code}"
        return "sampling answered"

    @mcp.tool()
    async def ask_roots(ctx: Context) -> str:
        """Ask the client's roots, which it never declared."""
        try:
            await _on_call_stream(ctx, ListRootsRequest(), ListRootsResult)
        except McpError as exc:
            return f"roots refused: {exc.error.code}"
        return "roots answered"

    @mcp.tool()
    async def ping_client(ctx: Context) -> str:
        """Ping the client on the call's stream."""
        await _on_call_stream(ctx, PingRequest(), EmptyResult)
        return "pong"

    @mcp.tool()
    async def reconnect(ctx: Context) -> str:
        """Close this call's stream mid-call (with --resumable the client resumes it with
        Last-Event-ID and reads the answer there)."""
        await ctx.close_sse_stream()
        await asyncio.sleep(0.2)
        return "answered after the stream broke"

    @mcp.prompt()
    def greet(name: str) -> str:
        """Greet someone."""
        return f"Say hello to {name}."

    @mcp.resource("peer://readme")
    def readme() -> str:
        """What this peer is."""
        return "the mcp 1.x peer"

    return mcp


async def _on_call_stream(ctx: Context, request: Any, result_type: Any) -> Any:
    # The SDK's list_roots() and send_ping() name no related request, so they would go out on
    # the standalone GET stream; tools that ask mid-call send them on the call's own stream.
    return await ctx.session.send_request(
        ServerRequest(request),
        result_type,
        metadata=ServerMessageMetadata(related_request_id=ctx.request_id),
    )


class Counting:
    """ASGI middleware: counts sessions opened and closed, records requests, serves /_test."""

    def __init__(self, app: Any, token: str | None = None) -> None:
        self.app = app
        # With a token, /mcp answers 401 to any request without `Authorization: Bearer <it>`.
        self.token = token
        self.opened: list[str] = []
        self.closed: list[str] = []
        self.requests: list[dict[str, Any]] = []
        self.answers: list[dict[str, Any]] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        if path.startswith("/_test/"):
            await self._test(path, send)
            return
        if path == "/authorize":
            await _send_json(send, 200, {"ok": True})
            return
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        if self.token is not None and headers.get("authorization") != f"Bearer {self.token}":
            self.requests.append({"http": scope["method"], "rpc": None, "refused": True})
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [(b"www-authenticate", b'Bearer realm="mcp1"')],
                }
            )
            await send({"type": "http.response.body", "body": b""})
            return
        session = headers.get("mcp-session-id")
        entry: dict[str, Any] = {
            "http": scope["method"],
            "rpc": None,
            "session": session,
            "version": headers.get("mcp-protocol-version"),
            "last_event_id": headers.get("last-event-id"),
        }
        self.requests.append(entry)
        body = bytearray()

        async def receive_recording() -> Any:
            message = await receive()
            if message["type"] == "http.request":
                body.extend(message.get("body", b""))
                if not message.get("more_body"):
                    try:
                        parsed = json.loads(body)
                        entry["rpc"] = parsed.get("method") if isinstance(parsed, dict) else None
                        self._record_answer(parsed, session)
                    except ValueError:
                        pass
            return message

        async def send_counting(message: Any) -> None:
            if message["type"] == "http.response.start":
                status = message["status"]
                issued = {
                    k.decode().lower(): v.decode() for k, v in message.get("headers", [])
                }.get("mcp-session-id")
                # A refused opening request carries an id too, but the SDK discards that
                # session at once: only an answered initialize opens one.
                if issued and session is None and status < 300 and issued not in self.opened:
                    self.opened.append(issued)
                if scope["method"] == "DELETE" and status < 300 and session:
                    self.closed.append(session)
            await send(message)

        await self.app(scope, receive_recording, send_counting)

    def _record_answer(self, parsed: Any, session: str | None) -> None:
        # A JSON-RPC response from the client: its answer to one of our questions.
        if not isinstance(parsed, dict) or "method" in parsed or "id" not in parsed:
            return
        result = parsed.get("result")
        action = result.get("action") if isinstance(result, dict) else None
        self.answers.append(
            {"id": parsed["id"], "session": session, "action": action, "error": "error" in parsed}
        )

    async def _test(self, path: str, send: Any) -> None:
        if path == "/_test/sessions":
            open_ids = [s for s in self.opened if s not in self.closed]
            payload: Any = {
                "opened": len(self.opened),
                "closed": len(self.closed),
                "active": len(open_ids),
                "open_ids": open_ids,
            }
        elif path == "/_test/requests":
            payload = self.requests
        elif path == "/_test/answers":
            payload = self.answers
        else:
            await _send_json(send, 404, {"error": "unknown"})
            return
        await _send_json(send, 200, payload)


async def _send_json(send: Any, status: int, payload: Any) -> None:
    body = json.dumps(payload).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json")],
        }
    )
    await send({"type": "http.response.body", "body": body})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--stateless", action="store_true")
    parser.add_argument("--json-response", action="store_true")
    parser.add_argument("--token", default=None, help="require this bearer token")
    parser.add_argument("--resumable", action="store_true", help="keep events (Last-Event-ID)")
    args = parser.parse_args()
    events = MemoryEventStore() if args.resumable else None
    mcp = build(
        args.port, stateless=args.stateless, json_response=args.json_response, events=events
    )
    app = Counting(mcp.streamable_http_app(), args.token)
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=args.port,
        log_level="warning",
        lifespan="on",
        timeout_graceful_shutdown=1,
    )


if __name__ == "__main__":
    main()
