"""Misbehaving and old-era servers, for the client's failure paths.

Run: ``python -m tests.peers.faults --mode MODE --port 8125 [--size N] [--token T]
[--supported V1,V2]``. The endpoint is ``http://127.0.0.1:<port>/mcp``; see README.md.

Two families:
- wire faults (``drop``, ``stall``, ``garbage``, ``huge``, ``unsupported-version`` ...) are a
  raw asyncio HTTP/1.1 server, so each one fails exactly as described, byte for byte;
- ``legacy*`` and ``auth`` wrap a real official-SDK ``MCPServer`` in a thin ASGI shim.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from tests.peers._common import (
    MCP_PATH,
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
        }

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


SDK_MODES = ("legacy", "legacy-stateless", "legacy-32022", "legacy-sse", "auth")


def main() -> None:
    parser = base_parser(__doc__ or "")
    modes = sorted([*RawFaults(0, []).handlers(), *SDK_MODES])
    parser.add_argument("--mode", required=True, choices=modes)
    parser.add_argument("--size", type=int, default=HUGE_DEFAULT, help="bytes of text for huge*")
    parser.add_argument("--token", default="secret", help="the bearer token the auth mode accepts")
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
