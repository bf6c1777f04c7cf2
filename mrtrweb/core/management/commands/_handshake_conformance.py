"""The conformance command's handshake-era flow (scenarios run at spec 2025-11-25 or older).

Kept beside ``mcp_conformance_client`` rather than in it: the same steps, performed with
:class:`mrtrweb.mcp.handshake.HandshakeClient` (``initialize``, a session, questions on the
stream). A question is answered headlessly the way a person accepting a pre-filled form would:
with the schema's defaults (SEP-1034), a typed value where there is none; a URL-mode question
is declined, since nobody is there to visit the page.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import mcp_types

from mrtrweb.mcp import ConnectionSettings, MCPError
from mrtrweb.mcp.handshake import HANDSHAKE_VERSIONS, HandshakeClient

from ._schema_values import answer, tool_arguments

__all__ = ["is_handshake_version", "run_handshake_scenario"]


def is_handshake_version(version: str | None) -> bool:
    return version in HANDSHAKE_VERSIONS


async def _answer(request: mcp_types.ElicitRequest) -> mcp_types.ElicitResult:
    """A question on the stream, answered as the 2026-07-28 flow answers its input requests."""
    result = answer("elicitation/create", request)
    # answer() gives an ElicitResult for every ElicitRequest (accepted form, declined URL).
    assert isinstance(result, mcp_types.ElicitResult)
    return result


async def run_handshake_scenario(
    url: str,
    steps: list[tuple[Any, ...]],
    log: Callable[[str], None],
    *,
    version: str,
    capabilities: mcp_types.ClientCapabilities,
) -> list[str]:
    """Run ``steps`` in one handshake-era session (closed at the end); return the errors.

    A step is ``("list",)``, ``("call", name, arguments or None)``, ``("call_first",)`` or
    ``("call_each",)``; ``None`` arguments are built from the tool's schema.
    """
    settings = ConnectionSettings(
        url=url, connect_timeout=5.0, read_timeout=20.0, capabilities=capabilities
    )
    versions = (version, *[v for v in HANDSHAKE_VERSIONS if v != version])
    errors: list[str] = []
    tools: dict[str, mcp_types.Tool] = {}
    async with HandshakeClient(settings, on_elicit=_answer, versions=versions) as client:
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
                        await _call(client, tools, name, arguments, log)
                    case ("call_first",):
                        if not tools:
                            raise MCPError("the server lists no tools")
                        await _call(client, tools, next(iter(tools)), None, log)
                    case ("call_each",):
                        for name in list(tools):
                            await _call(client, tools, name, None, log)
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
    log: Callable[[str], None],
) -> None:
    tool = tools.get(name)
    if arguments is None:
        arguments = tool_arguments(tool.input_schema) if tool else {}
    result = await client.call_tool(name, dict(arguments))
    text = " ".join(b.text for b in result.content if isinstance(b, mcp_types.TextContent))
    if result.is_error:
        raise MCPError(f"tools/call {name}: the tool failed: {text}")
    log(f"tools/call {name}: {text}")
