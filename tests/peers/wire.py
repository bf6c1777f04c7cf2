"""Raw 2026-07-28 requests with plain httpx, for proving how the peers behave on the wire.

Deliberately independent of ``mrtrweb.mcp``: these helpers build exactly what
protocol.md §1-2 prescribes so the peer tests do not depend on the client under test.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from typing import Any

import httpx

PROTOCOL_VERSION = "2026-07-28"
ACCEPT = "application/json, text/event-stream"
FULL_CAPABILITIES: dict[str, Any] = {"elicitation": {"form": {}, "url": {}}}
CLIENT_INFO: dict[str, Any] = {"name": "mrtrweb-peer-tests", "version": "0.1.0"}
NAME_BEARING = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}

_ids = itertools.count(1)


def envelope(
    capabilities: dict[str, Any] | None = None,
    version: str = PROTOCOL_VERSION,
    **extra: Any,
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": (
            FULL_CAPABILITIES if capabilities is None else capabilities
        ),
        "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
    }
    meta.update(extra)
    return meta


def encode_header_value(value: str) -> str:
    import base64
    import re

    plain = re.fullmatch(r"[\x20-\x7e]*", value) and value == value.strip()
    if plain and not re.fullmatch(r"=\?base64\?.*\?=", value):
        return value
    return "=?base64?" + base64.b64encode(value.encode()).decode() + "?="


def request_headers(
    method: str, params: dict[str, Any], version: str = PROTOCOL_VERSION
) -> dict[str, str]:
    headers = {
        "MCP-Protocol-Version": version,
        "Mcp-Method": method,
        "Accept": ACCEPT,
        "Content-Type": "application/json",
    }
    key = NAME_BEARING.get(method)
    if key is not None and isinstance(params.get(key), str):
        headers["Mcp-Name"] = encode_header_value(params[key])
    return headers


@dataclass
class Reply:
    """One HTTP exchange: status, content type, and the JSON-RPC messages it carried."""

    response: httpx.Response
    messages: list[dict[str, Any]] = field(default_factory=list)

    @property
    def status(self) -> int:
        return self.response.status_code

    @property
    def content_type(self) -> str:
        return self.response.headers.get("content-type", "").split(";")[0].strip()

    @property
    def final(self) -> dict[str, Any]:
        """The JSON-RPC response (the last message carrying an id)."""
        finals = [m for m in self.messages if "id" in m and ("result" in m or "error" in m)]
        assert finals, f"no JSON-RPC response in {self.response.text[:500]!r}"
        return finals[-1]

    @property
    def result(self) -> dict[str, Any]:
        final = self.final
        assert "result" in final, f"expected a result, got {final}"
        return final["result"]

    @property
    def error(self) -> dict[str, Any]:
        final = self.final
        assert "error" in final, f"expected an error, got {final}"
        return final["error"]

    @property
    def notifications(self) -> list[dict[str, Any]]:
        return [m for m in self.messages if "id" not in m]


def parse_sse(text: str) -> list[dict[str, Any]]:
    """JSON payloads of the SSE events in ``text`` (comment lines ignored)."""
    messages: list[dict[str, Any]] = []
    data: list[str] = []
    for line in text.replace("\r\n", "\n").split("\n"):
        if line == "":
            if data:
                messages.append(json.loads("\n".join(data)))
                data = []
        elif line.startswith(":"):
            continue
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
    if data:
        messages.append(json.loads("\n".join(data)))
    return messages


def parse_reply(response: httpx.Response) -> Reply:
    content_type = response.headers.get("content-type", "")
    if content_type.startswith("text/event-stream"):
        return Reply(response, parse_sse(response.text))
    if content_type.startswith("application/json") and response.content:
        body = response.json()
        return Reply(response, body if isinstance(body, list) else [body])
    return Reply(response, [])


def post(
    url: str,
    method: str,
    params: dict[str, Any] | None = None,
    *,
    capabilities: dict[str, Any] | None = None,
    meta: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
    drop_headers: tuple[str, ...] = (),
    request_id: int | str | None = None,
    version: str = PROTOCOL_VERSION,
    timeout: float = 20.0,
    client: httpx.Client | None = None,
) -> Reply:
    """POST one JSON-RPC request with the full 2026 envelope and headers."""
    body_params = dict(params or {})
    body_params["_meta"] = envelope(capabilities, version, **(meta or {}))
    all_headers = request_headers(method, body_params, version)
    all_headers.update(headers or {})
    for name in drop_headers:
        all_headers = {k: v for k, v in all_headers.items() if k.lower() != name.lower()}
    payload = {
        "jsonrpc": "2.0",
        "id": next(_ids) if request_id is None else request_id,
        "method": method,
        "params": body_params,
    }
    if client is not None:
        response = client.post(url, json=payload, headers=all_headers, timeout=timeout)
    else:
        response = httpx.post(url, json=payload, headers=all_headers, timeout=timeout)
    return parse_reply(response)


def call_tool(
    url: str,
    name: str,
    arguments: dict[str, Any] | None = None,
    *,
    input_responses: dict[str, Any] | None = None,
    request_state: str | None = None,
    **kwargs: Any,
) -> Reply:
    params: dict[str, Any] = {"name": name, "arguments": arguments or {}}
    if input_responses is not None:
        params["inputResponses"] = input_responses
    if request_state is not None:
        params["requestState"] = request_state
    return post(url, "tools/call", params, **kwargs)


def list_all(url: str, method: str, key: str, **kwargs: Any) -> tuple[list[dict[str, Any]], int]:
    """Follow nextCursor to the end; returns (items, pages). An empty-string cursor continues."""
    items: list[dict[str, Any]] = []
    cursor: str | None = None
    pages = 0
    while True:
        params = {} if cursor is None else {"cursor": cursor}
        result = post(url, method, params, **kwargs).result
        pages += 1
        items.extend(result[key])
        cursor = result.get("nextCursor")
        if cursor is None:
            return items, pages
        assert pages < 100, "pagination did not terminate"


def accept(content: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"action": "accept", "content": content} if content is not None else {"action": "accept"}
