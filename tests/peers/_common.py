"""Pieces shared by the peer servers: CLI, the wire recorder, serving, elicitation builders.

Imports stay light (no fastmcp / mcp here) so the raw fault servers start fast.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from collections import deque
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qs

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

HOST = "127.0.0.1"
MCP_PATH = "/mcp"
PROTOCOL_VERSION = "2026-07-28"
RECORDER_PATH = "/_peer/requests"
AUTHORIZE_PATH = "/authorize"

# GET /authorize?ref=<ref> visits, so URL-mode tests can prove the client never pre-fetched.
AUTHORIZE_VISITS: dict[str, int] = {}


def base_parser(description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--host", default=HOST)
    return parser


def add_state_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--state-ttl", type=float, default=600.0, help="requestState lifetime in seconds"
    )
    parser.add_argument(
        "--state-key",
        default=None,
        help="shared requestState key (any string); default: a per-process ephemeral key",
    )
    parser.add_argument("--page-size", type=int, default=3, help="items per list page")


def request_state_security(ttl: float, key: str | None, audience: str) -> Any:
    from mcp.server.request_state import RequestStateSecurity

    if key is None:
        return RequestStateSecurity.ephemeral(ttl=ttl, audience=audience)
    # The codec wants 32 random bytes; hashing lets tests pass any memorable string.
    secret = hashlib.sha256(key.encode()).digest()
    return RequestStateSecurity(keys=[secret], ttl=ttl, audience=audience)


def serve(app: ASGIApp, host: str, port: int) -> None:
    import uvicorn

    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        lifespan="auto",
        # Stalled test connections must not hold a SIGTERM'd peer open.
        timeout_graceful_shutdown=1,
    )
    uvicorn.Server(config).run()


async def send_json(
    send: Send, status: int, payload: Any, headers: tuple[tuple[str, str], ...] = ()
) -> None:
    body = json.dumps(payload).encode()
    raw_headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    raw_headers += [(k.encode(), v.encode()) for k, v in headers]
    await send({"type": "http.response.start", "status": status, "headers": raw_headers})
    await send({"type": "http.response.body", "body": body})


async def read_body(receive: Receive) -> bytes:
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def replaying_receive(body: bytes, receive: Receive) -> Receive:
    """A receive() that hands the buffered body to the app, then defers to the real one."""
    sent = False

    async def _receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return _receive


class PeerHarness:
    """ASGI wrapper that records every request to the MCP endpoint and serves test-only routes.

    - ``GET /_peer/requests``: JSON list of recorded requests (``seq``, ``method``, ``path``,
      ``headers`` as ``[name, value]`` pairs in wire order with lowercase names, ``body`` text,
      ``json`` parsed body or null). ``DELETE`` clears the list.
    - ``GET /authorize?ref=X``: the URL-mode target; counts visits per ``ref``.

    With ``set_cookie`` (a cookie name), every answer of the MCP endpoint sets that cookie to
    the request's sequence number, as a load balancer's affinity cookie or a session cookie
    would: what a client sends back shows whether it kept it (the recorded headers).
    """

    def __init__(self, app: ASGIApp, limit: int = 500, set_cookie: str | None = None) -> None:
        self.app = app
        self.records: deque[dict[str, Any]] = deque(maxlen=limit)
        self.seq = 0
        self.set_cookie = set_cookie

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        if path == RECORDER_PATH:
            if scope["method"] == "DELETE":
                self.records.clear()
                await send_json(send, 200, {"cleared": True})
            else:
                await send_json(send, 200, list(self.records))
            return
        if path == AUTHORIZE_PATH:
            query = parse_qs(scope.get("query_string", b"").decode())
            ref = query.get("ref", [""])[0]
            AUTHORIZE_VISITS[ref] = AUTHORIZE_VISITS.get(ref, 0) + 1
            await send_json(send, 200, {"authorized": ref})
            return
        if path.rstrip("/") == MCP_PATH:
            body = await read_body(receive)
            self.record(scope, body)
            receive = replaying_receive(body, receive)
            if self.set_cookie:
                send = _setting_cookie(send, f"{self.set_cookie}={self.seq}; Path=/")
        await self.app(scope, receive, send)

    def record(self, scope: Scope, body: bytes) -> None:
        self.seq += 1
        text = body.decode("utf-8", "replace")
        try:
            parsed = json.loads(text) if text else None
        except ValueError:
            parsed = None
        self.records.append(
            {
                "seq": self.seq,
                "time": time.time(),
                "method": scope["method"],
                "path": scope["path"],
                "query": scope.get("query_string", b"").decode("latin-1"),
                "headers": [
                    [k.decode("latin-1"), v.decode("latin-1")] for k, v in scope["headers"]
                ],
                "body": text,
                "json": parsed,
            }
        )


def _setting_cookie(send: Send, cookie: str) -> Send:
    """``send`` with a ``Set-Cookie: cookie`` header added to the response's start."""

    async def _send(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = [*message.get("headers", []), (b"set-cookie", cookie.encode("latin-1"))]
            message = {**message, "headers": headers}
        await send(message)

    return _send


def form_request(
    message: str, properties: dict[str, Any], required: list[str] | None = None
) -> Any:
    import mcp_types

    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return mcp_types.ElicitRequest(
        params=mcp_types.ElicitRequestFormParams(message=message, requested_schema=schema)
    )


def url_request(message: str, url: str) -> Any:
    import mcp_types

    return mcp_types.ElicitRequest(
        params=mcp_types.ElicitRequestURLParams(mode="url", message=message, url=url)
    )


def input_required(requests: dict[str, Any] | None, state: dict[str, Any] | None) -> Any:
    import mcp_types

    return mcp_types.InputRequiredResult(
        input_requests=requests or None,
        request_state=json.dumps(state, sort_keys=True) if state is not None else None,
    )


def load_state(raw: str | None) -> dict[str, Any]:
    """The plaintext state a tool minted (the SDK boundary has already verified and unsealed it)."""
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def missing_capability(mode: str) -> Any:
    from mcp.shared.exceptions import MCPError

    return MCPError(
        code=-32021,
        message=f"Client did not declare the {mode} elicitation capability this request needs",
        data={"requiredCapabilities": {"elicitation": {mode: {}}}},
    )


def supports_elicitation(capabilities: Any, mode: str) -> bool:
    """Per the 2026 schema: ``elicitation: {}`` means form only; url needs ``url: {}``."""
    elicitation = getattr(capabilities, "elicitation", None) if capabilities is not None else None
    if elicitation is None:
        return False
    if mode == "url":
        return elicitation.url is not None
    return elicitation.form is not None or elicitation.url is None
