"""Calls on handshake-era servers (MCP 2025-11-25, 2025-06-18): part 1 of issue 15.

A call on such a server is one ``tools/call`` (``prompts/get``, ``resources/read``) in a
session of its own, closed when the call is done (:class:`mrtrweb.mcp.handshake.
HandshakeClient`). What comes back is the same result model as from a 2026-07-28 server,
settled by the same code.

Questions are not parked yet: a server-to-client ``elicitation/create`` lives on the call's
open stream, so parking it as a round needs the process holding the stream to own the call
(issue 15, part 2). Until then a question is answered ``cancel`` at once (the server is never
left waiting) and the call fails with a plain message, whatever the tool made of the cancel.
"""

from __future__ import annotations

from typing import Any

import mcp_types

from mrtrweb.mcp import ConnectionSettings, MCPError
from mrtrweb.mcp.handshake import HandshakeClient

from ..models import Call

__all__ = ["QUESTIONS_NOT_YET_SUPPORTED", "HandshakeQuestionsNotSupported", "send_handshake"]

QUESTIONS_NOT_YET_SUPPORTED = "This server asks questions in the older protocol; not yet supported."


class HandshakeQuestionsNotSupported(MCPError):
    """The server asked a question on the call's stream; it was cancelled (see above)."""

    def __init__(self, asked: int) -> None:
        super().__init__(QUESTIONS_NOT_YET_SUPPORTED)
        self.asked = asked


async def send_handshake(
    call: Call, settings: ConnectionSettings, progress: Any
) -> tuple[Any, int | None]:
    """The call's result from a handshake-era server, and the HTTP status it came with."""
    asked: list[mcp_types.ElicitRequest] = []

    async def on_elicit(request: mcp_types.ElicitRequest) -> mcp_types.ElicitResult:
        asked.append(request)
        return mcp_types.ElicitResult(action="cancel")

    async with HandshakeClient(settings, on_elicit=on_elicit) as client:
        if call.method == Call.Method.TOOL:
            result: Any = await client.call_tool(
                call.target, call.arguments_json, on_notification=progress
            )
        elif call.method == Call.Method.PROMPT:
            result = await client.get_prompt(
                call.target, call.arguments_json, on_notification=progress
            )
        else:
            result = await client.read_resource(call.target, on_notification=progress)
        status = client.last_http_status
    if asked:
        raise HandshakeQuestionsNotSupported(len(asked))
    return result, status
