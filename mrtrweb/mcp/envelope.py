"""What every request carries: the JSON-RPC body with its ``_meta`` envelope, and the
standard headers (``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name``, credentials).

Pure functions of the connection's settings and the request: nothing here sends anything.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import mcp_types
from pydantic import BaseModel

from .config import ConnectionSettings
from .headers import NAME_BEARING_PARAMS, encode_header_value

__all__ = [
    "arguments_text",
    "dump",
    "encode_params",
    "meta",
    "request_body",
    "round_params",
    "standard_headers",
]


def dump(model: BaseModel) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def encode_params(params: Mapping[str, Any], raw: Mapping[str, str]) -> str:
    """JSON for ``params``, with the members in ``raw`` spliced in as the exact JSON text given."""
    parts = [f"{json.dumps(k)}:{json.dumps(v, separators=(',', ':'))}" for k, v in params.items()]
    parts += [f"{json.dumps(k)}:{text}" for k, text in raw.items()]
    return "{" + ",".join(parts) + "}"


def request_body(
    request_id: str, method: str, params: Mapping[str, Any], raw: Mapping[str, str]
) -> bytes:
    return (
        '{"jsonrpc":"2.0","id":'
        + json.dumps(request_id)
        + ',"method":'
        + json.dumps(method)
        + ',"params":'
        + encode_params(params, raw)
        + "}"
    ).encode("utf-8")


def meta(
    settings: ConnectionSettings, version: str, progress_token: str | int | None
) -> dict[str, Any]:
    """The ``_meta`` envelope: declared afresh on every request, since nothing is kept."""
    envelope: dict[str, Any] = {
        mcp_types.PROTOCOL_VERSION_META_KEY: version,
        mcp_types.CLIENT_CAPABILITIES_META_KEY: dump(settings.capabilities),
        mcp_types.CLIENT_INFO_META_KEY: dump(settings.client_info),
    }
    if settings.log_level:
        envelope[mcp_types.LOG_LEVEL_META_KEY] = settings.log_level
    if progress_token is not None:
        envelope["progressToken"] = progress_token
    return envelope


def credential_headers(settings: ConnectionSettings) -> dict[str, str]:
    headers = {str(k): str(v) for k, v in settings.headers.items()}
    if settings.bearer_token:
        headers["Authorization"] = f"Bearer {settings.bearer_token}"
    return headers


def standard_headers(
    settings: ConnectionSettings, version: str, method: str, params: Mapping[str, Any]
) -> dict[str, str]:
    headers = credential_headers(settings)
    headers["MCP-Protocol-Version"] = version
    headers["Mcp-Method"] = method
    name_param = NAME_BEARING_PARAMS.get(method)
    if name_param and isinstance(params.get(name_param), str):
        headers["Mcp-Name"] = encode_header_value(params[name_param])
    return headers


def arguments_text(arguments: Mapping[str, Any] | str | None) -> tuple[str | None, dict[str, Any]]:
    """The JSON text to send and its parsed form (for header mirroring)."""
    if arguments is None:
        return None, {}
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments)
        except ValueError as exc:
            raise ValueError("arguments must be a JSON object") from exc
        if not isinstance(parsed, dict):
            raise ValueError("arguments must be a JSON object")
        return arguments, parsed
    return json.dumps(dict(arguments), separators=(",", ":"), ensure_ascii=False), dict(arguments)


def round_params(
    input_responses: Mapping[str, mcp_types.InputResponse | Mapping[str, Any]] | None,
    request_state: str | None,
) -> dict[str, Any]:
    params: dict[str, Any] = {}
    if input_responses is not None:
        params["inputResponses"] = {
            key: dump(value) if isinstance(value, BaseModel) else dict(value)
            for key, value in input_responses.items()
        }
    # Only ever echo a state the server gave; never invent one.
    if request_state is not None:
        params["requestState"] = request_state
    return params
