"""Era detection: does an endpoint speak 2026-07-28 ("modern") or only the handshake era?

Verdicts are cached per endpoint URL, shared by every client in the process (spec: cache per
origin). Per the spec's backward-compatibility rules, success or a modern JSON-RPC error
(-32020, -32021, -32022) is modern evidence; a 4xx without one is not. 401/403 and network
failures are raised, never taken as a verdict.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal

import mcp_types
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic import ValidationError

from .config import ConnectionSettings
from .envelope import credential_headers, dump
from .errors import (
    HeaderMismatch,
    HTTPStatusError,
    JSONRPCError,
    LegacyServer,
    MCPError,
    MethodNotFound,
    MissingClientCapability,
    UnsupportedProtocolVersion,
)
from .transport import HTTPTransport

__all__ = ["Era", "cached", "describe_legacy", "forget_era", "probe", "remember"]

Era = Literal["modern", "legacy"]

_ERA_CACHE: dict[str, Era] = {}


def cached(url: str) -> Era | None:
    return _ERA_CACHE.get(url)


def remember(url: str, era: Era, *, overwrite: bool = True) -> None:
    if overwrite:
        _ERA_CACHE[url] = era
    else:
        _ERA_CACHE.setdefault(url, era)


def forget_era(url: str | None = None) -> None:
    """Drop the cached era verdict of one endpoint, or of all (to re-probe after a failure)."""
    if url is None:
        _ERA_CACHE.clear()
    else:
        _ERA_CACHE.pop(url, None)


async def probe(discover: Callable[[], Awaitable[Any]]) -> Era:
    """The verdict of one ``server/discover`` (``discover`` sends it)."""
    try:
        result = await discover()
    except (HeaderMismatch, MissingClientCapability, UnsupportedProtocolVersion):
        return "modern"
    except LegacyServer:
        return "legacy"
    except (HTTPStatusError, MethodNotFound):
        return "legacy"
    except JSONRPCError as exc:
        return "legacy" if exc.http_status is not None and exc.http_status >= 400 else "modern"
    return "modern" if _modern_discovery(result) else "legacy"


def _modern_discovery(result: Any) -> bool:
    """Whether a successful ``server/discover`` answer is a 2026-07-28 server's.

    A handshake-era server may answer any method with an empty result (the conformance
    suite's do), and one may list only handshake versions (go-sdk's stateful default): both
    are legacy, as the SDK's probe decides. Anything else that looks like a result is
    modern, and a malformed one is reported by the request that reads it.
    """
    if not isinstance(result, dict):
        return True
    versions = result.get("supportedVersions")
    if isinstance(versions, list):
        return any(v not in HANDSHAKE_PROTOCOL_VERSIONS for v in versions)
    return "resultType" in result


async def describe_legacy(
    transport: HTTPTransport,
    settings: ConnectionSettings,
    request_id: str,
    credentials: Mapping[str, str] | None = None,
) -> str:
    """Ask the legacy handshake who the server is, for a message a person can act on."""
    body = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {
            "protocolVersion": HANDSHAKE_PROTOCOL_VERSIONS[-1],
            "capabilities": {},
            "clientInfo": dump(settings.client_info),
        },
    }
    try:
        response = await transport.post(
            json.dumps(body).encode(),
            request_id,
            {**credential_headers(settings), **(credentials or {})},
            None,
        )
    except MCPError:
        return "it did not answer a 2026-07-28 request as a modern server would"
    # The handshake opened a session: end it, or every such question leaves one behind.
    session_id = response.headers.get("mcp-session-id")
    if session_id:
        await transport.end_session(
            {**credential_headers(settings), **(credentials or {}), "Mcp-Session-Id": session_id}
        )
    try:
        result = mcp_types.InitializeResult.model_validate(response.message.get("result"))
    except ValidationError:
        return "it did not answer a 2026-07-28 request as a modern server would"
    info = result.server_info
    return f"{info.name} {info.version} negotiated MCP {result.protocol_version}"
