"""The conformance command's handshake-era flow (scenarios run at spec 2025-11-25 or older).

Kept beside ``mcp_conformance_client`` rather than in it: the same steps, performed with
:class:`mrtrweb.mcp.handshake.HandshakeClient` (``initialize``, a session, questions on the
stream). A question is answered headlessly the way a person accepting a pre-filled form would:
with the schema's defaults (SEP-1034), a typed value where there is none; a URL-mode question
is declined, since nobody is there to visit the page.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import mcp_types

from mrtrweb.mcp import ConnectionSettings, MCPError
from mrtrweb.mcp.handshake import HANDSHAKE_VERSIONS, HandshakeClient

__all__ = ["Values", "is_handshake_version", "run_handshake_scenario"]

Schema = Mapping[str, Any]


@dataclass(frozen=True)
class Values:
    """What the command answers with (its own helpers, passed in: this module is imported by
    the command, never the other way round)."""

    form_content: Callable[[Schema], dict[str, Any]]
    tool_arguments: Callable[[Schema], dict[str, Any]]
    capabilities: mcp_types.ClientCapabilities


def is_handshake_version(version: str | None) -> bool:
    return version in HANDSHAKE_VERSIONS


def answerer(values: Values) -> Callable[[mcp_types.ElicitRequest], Any]:
    async def answer(request: mcp_types.ElicitRequest) -> mcp_types.ElicitResult:
        params = request.params
        if isinstance(params, mcp_types.ElicitRequestFormParams):
            schema = params.requested_schema
            raw = schema if isinstance(schema, dict) else schema.model_dump(by_alias=True)
            return mcp_types.ElicitResult(action="accept", content=values.form_content(raw))
        return mcp_types.ElicitResult(action="decline")

    return answer


async def run_handshake_scenario(
    url: str,
    steps: list[tuple[Any, ...]],
    log: Callable[[str], None],
    *,
    version: str,
    values: Values,
) -> list[str]:
    """Run ``steps`` in one handshake-era session (closed at the end); return the errors.

    A step is ``("list",)``, ``("call", name, arguments or None)``, ``("call_first",)`` or
    ``("call_each",)``; ``None`` arguments are built from the tool's schema.
    """
    settings = ConnectionSettings(
        url=url, connect_timeout=5.0, read_timeout=20.0, capabilities=values.capabilities
    )
    versions = (version, *[v for v in HANDSHAKE_VERSIONS if v != version])
    errors: list[str] = []
    tools: dict[str, mcp_types.Tool] = {}
    async with HandshakeClient(settings, on_elicit=answerer(values), versions=versions) as client:
        try:
            found = await client.open()
            log(f"initialize: {found.server_info.name} speaks {found.protocol_version}")
        except MCPError as exc:
            errors.append(f"initialize: {type(exc).__name__}: {exc}")
            return errors
        for step in steps:
            try:
                match step:
                    case ("list",):
                        tools = {t.name: t for t in (await client.list_tools()).items}
                        log(f"tools/list: {list(tools)}")
                    case ("call", name, arguments):
                        await _call(client, tools, name, arguments, values, log)
                    case ("call_first",):
                        if not tools:
                            raise MCPError("the server lists no tools")
                        await _call(client, tools, next(iter(tools)), None, values, log)
                    case ("call_each",):
                        for name in list(tools):
                            await _call(client, tools, name, None, values, log)
                    case _:
                        raise MCPError(f"{step} is not part of the handshake-era flow")
            except MCPError as exc:
                errors.append(f"{step}: {type(exc).__name__}: {exc}")
                log(f"ERROR {step}: {type(exc).__name__}: {exc}")
    return errors


async def _call(
    client: HandshakeClient,
    tools: dict[str, mcp_types.Tool],
    name: str,
    arguments: Any,
    values: Values,
    log: Callable[[str], None],
) -> None:
    tool = tools.get(name)
    if arguments is None:
        arguments = values.tool_arguments(tool.input_schema) if tool else {}
    result = await client.call_tool(name, dict(arguments))
    text = " ".join(b.text for b in result.content if isinstance(b, mcp_types.TextContent))
    if result.is_error:
        raise MCPError(f"tools/call {name}: the tool failed: {text}")
    log(f"tools/call {name}: {text}")
