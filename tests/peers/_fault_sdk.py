"""The small official-SDK server behind the ``legacy*`` and ``auth`` fault modes.

Kept apart from ``faults.py`` so the raw modes never pay for importing the SDK.
"""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.resolve import Elicit, Resolve
from pydantic import BaseModel
from starlette.applications import Starlette

from tests.peers._common import MCP_PATH


class Name(BaseModel):
    name: str


def ask_name() -> Elicit[Name]:
    return Elicit("What is your name?", Name)


def sdk_server() -> MCPServer:
    srv = MCPServer("mrtrweb-fault-peer", version="2.3.0", log_level="WARNING")

    @srv.tool(description="Return the text unchanged.")
    def echo(text: str) -> str:
        return text

    @srv.tool(description="Add two integers.")
    def add(a: int, b: int) -> int:
        return a + b

    @srv.tool(description="Ask a name (on 2025: a server-to-client elicitation on the stream).")
    def greet(name: Annotated[Name, Resolve(ask_name)]) -> str:
        return f"Hello, {name.name}!"

    return srv


def sdk_app(stateless: bool, json_response: bool) -> Starlette:
    return sdk_server().streamable_http_app(
        streamable_http_path=MCP_PATH, stateless_http=stateless, json_response=json_response
    )


def sse_app() -> Starlette:
    """The deprecated 2024-11-05 HTTP+SSE transport: GET /mcp streams, POSTs go elsewhere."""
    return sdk_server().sse_app(sse_path=MCP_PATH, message_path="/messages/")
