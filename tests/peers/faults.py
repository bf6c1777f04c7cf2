"""Misbehaving and old-era servers, for the client's failure paths.

Run: ``python -m tests.peers.faults --mode MODE --port 8125 [--size N] [--token T]
[--supported V1,V2]``. The endpoint is ``http://127.0.0.1:<port>/mcp``; see README.md.

Three families:
- wire faults (``drop``, ``stall``, ``garbage``, ``huge``, ``unsupported-version``,
  ``http-429`` (Retry-After: 7), ``http-503`` (Retry-After as an HTTP-date in 2099),
  ``http-500``, ``http-502``, ``http-504`` ...) are a raw asyncio HTTP/1.1 server, so each one
  fails exactly as described, byte for byte;
- ``legacy*`` and ``auth`` wrap a real official-SDK ``MCPServer`` in a thin ASGI shim;
- ``flaky`` is the modern SDK test peer (``tests.peers.sdk_server``, plus the idempotent tool
  ``set_flag``) behind a shim that makes *resubmissions* (requests carrying
  ``inputResponses``) fail on demand, so a round parks normally and its delivery fails. Set the
  fault with ``POST /_peer/fault`` ``{"fault": F, "times": N, "retry_after": S, "delay": S}``
  (``GET`` shows it and what was served); the next N resubmissions get it, then it passes:
  - ``503`` / ``429``: refused before the server handles anything (with Retry-After if set);
  - ``stall``: handled, then the answer never comes (the client's read timeout fires);
  - ``drop``: handled, then the connection breaks half way through the answer;
  - ``garbage``: handled, then answered with bytes that are not JSON;
  - ``slow``: waits ``delay`` seconds before handling; a client that leaves meanwhile is never
    handled (so a killed sender leaves nothing done on the server).
  ``/_peer/requests`` records only the requests the server really handled.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from tests.peers._common import (
    MCP_PATH,
    Message,
    PeerHarness,
    Receive,
    Scope,
    Send,
    base_parser,
    read_body,
    replaying_receive,
    send_json,
    serve,
)

HUGE_DEFAULT = 12_000_000  # over the client's 10 MB default cap
LEGACY_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")


# --------------------------------------------------------------------------- raw HTTP


@dataclass
class RawRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        try:
            return json.loads(self.body)
        except ValueError:
            return None

    @property
    def rpc_id(self) -> Any:
        body = self.json
        return body.get("id") if isinstance(body, dict) else None

    @property
    def meta(self) -> dict[str, Any]:
        body = self.json
        params = body.get("params") if isinstance(body, dict) else None
        meta = params.get("_meta") if isinstance(params, dict) else None
        return meta if isinstance(meta, dict) else {}


async def read_request(reader: asyncio.StreamReader) -> RawRequest | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
        return None
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = [*lines[0].split(" ", 2), "", ""][:3]
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if ":" in line:
            name, value = line.split(":", 1)
            headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0") or 0)
    try:
        body = await reader.readexactly(length) if length else b""
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    return RawRequest(method, path.split("?", 1)[0], headers, body)


def response_head(status: str, headers: dict[str, str]) -> bytes:
    lines = [f"HTTP/1.1 {status}"] + [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def fixed(status: str, content_type: str, body: bytes, close: bool = False) -> bytes:
    headers = {"Content-Type": content_type, "Content-Length": str(len(body))}
    if close:
        headers["Connection"] = "close"
    return response_head(status, headers) + body


def chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def sse_event(message: dict[str, Any]) -> bytes:
    return b"event: message\ndata: " + json.dumps(message).encode() + b"\n\n"


def progress_event(request: RawRequest) -> bytes:
    token = request.meta.get("progressToken")
    if token is None:
        # No token means no progress notification may be sent; a comment keeps the shape.
        return b": working\n\n"
    return sse_event(
        {
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": {"progressToken": token, "progress": 1, "total": 2, "message": "half way"},
        }
    )


SSE_CHUNKED = {
    "Content-Type": "text/event-stream",
    "Cache-Control": "no-cache",
    "Transfer-Encoding": "chunked",
}

Handler = Callable[[RawRequest, asyncio.StreamReader, asyncio.StreamWriter], Awaitable[bool]]
"""Answers one request; returns True to keep the connection open for the next one."""


class RawFaults:
    def __init__(self, size: int, supported: list[str]) -> None:
        self.size = size
        self.supported = supported
        self._huge: bytes | None = None

    def huge_body(self, rpc_id: Any) -> bytes:
        if self._huge is None:
            self._huge = b"x" * self.size
        head = (
            b'{"jsonrpc": "2.0", "id": '
            + json.dumps(rpc_id).encode()
            + b', "result": {"resultType": "complete", "isError": false, '
            + b'"content": [{"type": "text", "text": "'
        )
        return head + self._huge + b'"}]}}'

    def handlers(self) -> dict[str, Handler]:
        return {
            "drop": self.drop,
            "drop-json": self.drop_json,
            "sse-no-result": self.sse_no_result,
            "close": self.close,
            "stall": self.stall,
            "stall-sse": self.stall_sse,
            "garbage": self.garbage,
            "wrong-content-type": self.wrong_content_type,
            "not-jsonrpc": self.not_jsonrpc,
            "bad-sse": self.bad_sse,
            "huge": self.huge,
            "huge-chunked": self.huge_chunked,
            "huge-sse": self.huge_sse,
            "unsupported-version": self.unsupported_version,
            # HTTP errors without a JSON-RPC body (what proxies and overloaded servers send).
            "http-429": self.http_status(429, "Too Many Requests", "7"),
            "http-503": self.http_status(
                503, "Service Unavailable", "Wed, 21 Oct 2099 07:28:00 GMT"
            ),
            "http-500": self.http_status(500, "Internal Server Error"),
            "http-502": self.http_status(502, "Bad Gateway"),
            "http-504": self.http_status(504, "Gateway Timeout"),
        }

    @staticmethod
    def http_status(code: int, reason: str, retry_after: str | None = None) -> Handler:
        async def answer(request: RawRequest, reader: Any, writer: asyncio.StreamWriter) -> bool:
            body = f"{code} {reason}".encode()
            headers = {"Content-Type": "text/plain", "Content-Length": str(len(body))}
            if retry_after is not None:
                headers["Retry-After"] = retry_after
            writer.write(response_head(f"{code} {reason}", headers) + body)
            return True

        return answer

    async def drop(self, request: RawRequest, reader: Any, writer: asyncio.StreamWriter) -> bool:
        partial = (
            b'event: message\ndata: {"jsonrpc": "2.0", "id": ' + json.dumps(request.rpc_id).encode()
        )
        writer.write(response_head("200 OK", SSE_CHUNKED) + chunk(progress_event(request)))
        # The chunk header promises more bytes than ever arrive: a broken stream, not an EOF.
        writer.write(f"{len(partial) + 200:x}\r\n".encode() + partial)
        await writer.drain()
        await asyncio.sleep(0.05)
        return False

    async def drop_json(
        self, request: RawRequest, reader: Any, writer: asyncio.StreamWriter
    ) -> bool:
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": request.rpc_id,
                "result": {"resultType": "complete", "content": []},
            }
        ).encode()
        head = {"Content-Type": "application/json", "Content-Length": str(len(body))}
        writer.write(response_head("200 OK", head) + body[: len(body) // 2])
        await writer.drain()
        await asyncio.sleep(0.05)
        return False

    async def sse_no_result(
        self, request: RawRequest, reader: Any, writer: asyncio.StreamWriter
    ) -> bool:
        writer.write(response_head("200 OK", SSE_CHUNKED) + chunk(progress_event(request)))
        writer.write(b"0\r\n\r\n")  # a clean end of the stream, with no JSON-RPC response in it
        await writer.drain()
        return True

    async def close(self, request: RawRequest, reader: Any, writer: asyncio.StreamWriter) -> bool:
        return False

    async def stall(self, request: RawRequest, reader: asyncio.StreamReader, writer: Any) -> bool:
        await reader.read()  # returns when the client gives up and closes
        return False

    async def stall_sse(
        self, request: RawRequest, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> bool:
        writer.write(response_head("200 OK", SSE_CHUNKED) + chunk(progress_event(request)))
        await writer.drain()
        await reader.read()
        return False

    async def garbage(self, request: RawRequest, reader: Any, writer: asyncio.StreamWriter) -> bool:
        writer.write(fixed("200 OK", "application/json", b"this is {not json"))
        return True

    async def wrong_content_type(
        self, request: RawRequest, reader: Any, writer: asyncio.StreamWriter
    ) -> bool:
        page = b"<!doctype html><html><body><h1>Welcome</h1></body></html>"
        writer.write(fixed("200 OK", "text/html; charset=utf-8", page))
        return True

    async def not_jsonrpc(
        self, request: RawRequest, reader: Any, writer: asyncio.StreamWriter
    ) -> bool:
        writer.write(fixed("200 OK", "application/json", b'{"hello": "world"}'))
        return True

    async def bad_sse(self, request: RawRequest, reader: Any, writer: asyncio.StreamWriter) -> bool:
        body = b"event: message\ndata: {this is not json\n\n"
        writer.write(fixed("200 OK", "text/event-stream", body))
        return True

    async def huge(self, request: RawRequest, reader: Any, writer: asyncio.StreamWriter) -> bool:
        body = self.huge_body(request.rpc_id)
        head = {"Content-Type": "application/json", "Content-Length": str(len(body))}
        await write_slowly(writer, response_head("200 OK", head), [body])
        return False

    async def huge_chunked(
        self, request: RawRequest, reader: Any, writer: asyncio.StreamWriter
    ) -> bool:
        body = self.huge_body(request.rpc_id)
        head = {"Content-Type": "application/json", "Transfer-Encoding": "chunked"}
        parts = [chunk(body[i : i + 65536]) for i in range(0, len(body), 65536)] + [b"0\r\n\r\n"]
        await write_slowly(writer, response_head("200 OK", head), parts)
        return False

    async def huge_sse(
        self, request: RawRequest, reader: Any, writer: asyncio.StreamWriter
    ) -> bool:
        event = b"event: message\ndata: " + self.huge_body(request.rpc_id) + b"\n\n"
        parts = [chunk(event[i : i + 65536]) for i in range(0, len(event), 65536)] + [b"0\r\n\r\n"]
        await write_slowly(writer, response_head("200 OK", SSE_CHUNKED), parts)
        return False

    async def unsupported_version(
        self, request: RawRequest, reader: Any, writer: asyncio.StreamWriter
    ) -> bool:
        requested = request.headers.get("mcp-protocol-version") or request.meta.get(
            "io.modelcontextprotocol/protocolVersion", ""
        )
        body = {
            "jsonrpc": "2.0",
            "id": request.rpc_id,
            "error": {
                "code": -32022,
                "message": "Unsupported protocol version",
                "data": {"supported": self.supported, "requested": requested},
            },
        }
        writer.write(fixed("400 Bad Request", "application/json", json.dumps(body).encode()))
        return True


async def write_slowly(writer: asyncio.StreamWriter, head: bytes, parts: list[bytes]) -> None:
    writer.write(head)
    for part in parts:
        writer.write(part)
        await writer.drain()


def run_raw(mode: str, host: str, port: int, size: int, supported: list[str]) -> None:
    handler = RawFaults(size, supported).handlers()[mode]

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                request = await read_request(reader)
                if request is None:
                    break
                if request.method != "POST" or request.path.rstrip("/") != MCP_PATH:
                    writer.write(fixed("404 Not Found", "text/plain", b"not found"))
                    await writer.drain()
                    continue
                keep = await handler(request, reader, writer)
                await writer.drain()
                if not keep:
                    break
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def main() -> None:
        server = await asyncio.start_server(connection, host, port, limit=1 << 20)
        async with server:
            await server.serve_forever()

    asyncio.run(main())


# --------------------------------------------------------------------------- SDK-backed modes

ASGI = Callable[[Scope, Receive, Send], Awaitable[None]]


def header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key == name:
            return value.decode("latin-1")
    return None


def legacy_shim(app: ASGI, style: str) -> ASGI:
    """Make the SDK's 2025 path answer a modern-version request the way a 2025 server does.

    The SDK routes any non-handshake ``MCP-Protocol-Version`` to its modern handler, so the
    header is intercepted here:
    - ``stateful``: the header is dropped and the SDK's own 2025 transport answers; without a
      session id that is 400 ``-32600 "Bad Request: Missing session ID"`` (id null), exactly
      what a handshake-era python-sdk server answers;
    - ``stateless``: the 2025 python-sdk version gate, 400 ``-32600 "Bad Request: Unsupported
      protocol version: ..."``;
    - ``32022``: a 2025 server that knows the modern error: 400 -32022 listing only the
      handshake versions.
    """

    async def shim(scope: Scope, receive: Receive, send: Send) -> None:
        version = header(scope, b"mcp-protocol-version") if scope["type"] == "http" else None
        if version is None or version in LEGACY_VERSIONS:
            await app(scope, receive, send)
            return
        if style == "stateful":
            scope = dict(scope)
            scope["headers"] = [(k, v) for k, v in scope["headers"] if k != b"mcp-protocol-version"]
            await app(scope, receive, send)
            return
        body = await read_body(receive)
        try:
            rpc_id = json.loads(body).get("id")
        except (ValueError, AttributeError):
            rpc_id = None
        if style == "stateless":
            error = {
                "code": -32600,
                "message": f"Bad Request: Unsupported protocol version: {version}. "
                f"Supported versions: {', '.join(LEGACY_VERSIONS)}",
            }
            await send_json(send, 400, {"jsonrpc": "2.0", "id": "server-error", "error": error})
            return
        error = {
            "code": -32022,
            "message": "Unsupported protocol version",
            "data": {"supported": list(LEGACY_VERSIONS), "requested": version},
        }
        await send_json(send, 400, {"jsonrpc": "2.0", "id": rpc_id, "error": error})

    return shim


def auth_shim(app: ASGI, token: str, port: int, host: str) -> ASGI:
    """Bearer-token gate in front of a modern SDK server, with RFC 9728 metadata."""
    base = f"http://{host}:{port}"
    metadata_url = f"{base}/.well-known/oauth-protected-resource{MCP_PATH}"
    metadata = {
        "resource": f"{base}{MCP_PATH}",
        "authorization_servers": [f"{base}/"],
        "scopes_supported": ["mcp:read", "mcp:write"],
        "bearer_methods_supported": ["header"],
    }

    async def shim(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        if scope["path"].startswith("/.well-known/oauth-protected-resource"):
            await send_json(send, 200, metadata)
            return
        if scope["path"].rstrip("/") != MCP_PATH:
            await app(scope, receive, send)
            return
        authorization = header(scope, b"authorization") or ""
        if authorization == f"Bearer {token}":
            await app(scope, receive, send)
            return
        body = await read_body(receive)
        receive = replaying_receive(body, receive)
        if authorization == "Bearer limited":
            challenge = (
                'Bearer error="insufficient_scope", scope="mcp:read mcp:write", '
                f'resource_metadata="{metadata_url}"'
            )
            payload = {"error": "insufficient_scope", "error_description": "needs mcp:write"}
            await send_json(send, 403, payload, (("www-authenticate", challenge),))
            return
        challenge = f'Bearer resource_metadata="{metadata_url}", scope="mcp:read mcp:write"'
        if authorization:
            challenge = f'Bearer error="invalid_token", resource_metadata="{metadata_url}"'
        payload = {"error": "invalid_token", "error_description": "missing or invalid bearer token"}
        await send_json(send, 401, payload, (("www-authenticate", challenge),))

    return shim


SDK_MODES = ("legacy", "legacy-stateless", "legacy-32022", "legacy-sse", "auth", "flaky")
FAULT_PATH = "/_peer/fault"
FLAKY_FAULTS = ("503", "429", "stall", "drop", "garbage", "slow")


def _is_resubmission(body: bytes) -> bool:
    try:
        params = json.loads(body).get("params")
    except (ValueError, AttributeError):
        return False
    return isinstance(params, dict) and "inputResponses" in params


class FlakyFront:
    """Fails resubmissions as told through ``/_peer/fault`` (see the module docstring)."""

    def __init__(self, app: ASGI) -> None:
        self.app = app
        self.plan: dict[str, Any] = {"fault": None, "times": 0, "retry_after": None, "delay": 0}
        self.served: list[str] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope["path"] == FAULT_PATH:
            if scope["method"] == "POST":
                plan = json.loads(await read_body(receive) or b"{}")
                if plan.get("fault") not in (None, *FLAKY_FAULTS):
                    await send_json(send, 400, {"error": f"unknown fault {plan.get('fault')}"})
                    return
                self.plan = {"retry_after": None, "delay": 0, "times": 1, **plan}
                self.served.clear()
            await send_json(send, 200, {**self.plan, "served": self.served})
            return
        if scope["path"].rstrip("/") != MCP_PATH or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body = await read_body(receive)
        fault = self.plan["fault"]
        if not fault or self.plan["times"] <= 0 or not _is_resubmission(body):
            await self.app(scope, replaying_receive(body, receive), send)
            return
        self.plan["times"] -= 1
        self.served.append(fault)
        await getattr(self, f"fault_{fault}")(scope, body, receive, send)

    async def _refuse(self, status: int, send: Send) -> None:
        text = b"busy, try again later"
        headers = [(b"content-type", b"text/plain"), (b"content-length", b"%d" % len(text))]
        if self.plan["retry_after"] is not None:
            # Latin-1: a value of "\u00b2" goes out as the one byte 0xB2, as a broken server's.
            headers.append((b"retry-after", str(self.plan["retry_after"]).encode("latin-1")))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": text})

    async def fault_503(self, scope: Scope, body: bytes, receive: Receive, send: Send) -> None:
        await self._refuse(503, send)

    async def fault_429(self, scope: Scope, body: bytes, receive: Receive, send: Send) -> None:
        await self._refuse(429, send)

    async def _handled(self, scope: Scope, body: bytes, receive: Receive) -> tuple[Message, bytes]:
        """Let the real server handle the request; its response start and whole body."""
        start: Message = {}
        chunks: list[bytes] = []

        async def capture(message: Message) -> None:
            if message["type"] == "http.response.start":
                start.update(message)
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        await self.app(scope, replaying_receive(body, receive), capture)
        return start, b"".join(chunks)

    async def fault_stall(self, scope: Scope, body: bytes, receive: Receive, send: Send) -> None:
        await self._handled(scope, body, receive)
        while (await receive())["type"] != "http.disconnect":
            pass

    async def fault_drop(self, scope: Scope, body: bytes, receive: Receive, send: Send) -> None:
        start, answer = await self._handled(scope, body, receive)
        await send(start)
        await send(
            {"type": "http.response.body", "body": answer[: len(answer) // 2], "more_body": True}
        )
        # Raising after a partial body makes uvicorn close the connection mid-response.
        raise ConnectionAbortedError("flaky peer: dropped mid-response")

    async def fault_garbage(self, scope: Scope, body: bytes, receive: Receive, send: Send) -> None:
        await self._handled(scope, body, receive)
        await send_json_bytes(send, b"this is {not json")

    async def fault_slow(self, scope: Scope, body: bytes, receive: Receive, send: Send) -> None:
        waiter = asyncio.ensure_future(receive())
        done, _ = await asyncio.wait({waiter}, timeout=float(self.plan["delay"]))
        if done and waiter.result()["type"] == "http.disconnect":
            self.served.append("slow: client left before it was handled")
            return
        waiter.cancel()
        await self.app(scope, replaying_receive(body, receive), send)


async def send_json_bytes(send: Send, body: bytes) -> None:
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def main() -> None:
    parser = base_parser(__doc__ or "")
    modes = sorted([*RawFaults(0, []).handlers(), *SDK_MODES])
    parser.add_argument("--mode", required=True, choices=modes)
    parser.add_argument("--size", type=int, default=HUGE_DEFAULT, help="bytes of text for huge*")
    parser.add_argument("--token", default="secret", help="the bearer token the auth mode accepts")
    parser.add_argument("--state-key", default=None, help="flaky: shared requestState key")
    parser.add_argument("--state-ttl", type=float, default=600.0, help="flaky: state lifetime")
    parser.add_argument(
        "--supported",
        default="2027-01-01",
        help="comma-separated data.supported for unsupported-version",
    )
    args = parser.parse_args()
    if args.mode not in SDK_MODES:
        run_raw(args.mode, args.host, args.port, args.size, args.supported.split(","))
        return
    from tests.peers._fault_sdk import sdk_app, sse_app

    if args.mode == "flaky":
        from tests.peers._flaky_sdk import flaky_server

        app = flaky_server(args.state_key, args.state_ttl).streamable_http_app(
            streamable_http_path=MCP_PATH, json_response=True
        )
        # The harness inside the front: only requests the server really handled are recorded.
        serve(FlakyFront(PeerHarness(app)), args.host, args.port)
        return
    if args.mode == "legacy-sse":
        app = sse_app()
    elif args.mode == "auth":
        app = auth_shim(
            sdk_app(stateless=False, json_response=True), args.token, args.port, args.host
        )
    else:
        style = {"legacy": "stateful", "legacy-stateless": "stateless", "legacy-32022": "32022"}
        stateless = args.mode == "legacy-stateless"
        app = legacy_shim(sdk_app(stateless=stateless, json_response=False), style[args.mode])
    serve(PeerHarness(app), args.host, args.port)


if __name__ == "__main__":
    main()
