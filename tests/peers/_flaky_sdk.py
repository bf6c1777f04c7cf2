"""The server behind the ``flaky`` fault mode: the modern SDK test peer plus one idempotent tool.

Kept apart from ``faults.py`` so the raw modes never pay for importing the SDK.
"""

from __future__ import annotations

from typing import Annotated

import mcp_types
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.resolve import Elicit, Resolve

from tests.peers.sdk_server import Confirm, build_server

FLAGS: dict[str, bool] = {}


def ask_flag(name: str) -> Elicit[Confirm]:
    return Elicit(f"Set the flag {name}?", Confirm)


def set_flag(name: str, confirm: Annotated[Confirm, Resolve(ask_flag)]) -> str:
    FLAGS[name] = confirm.sure
    return f"flag {name} = {confirm.sure}"


def flaky_server(state_key: str | None, state_ttl: float) -> MCPServer:
    srv = build_server(page_size=50, state_ttl=state_ttl, state_key=state_key)
    srv.tool(
        description="Set a named flag after a confirmation; setting it twice changes nothing.",
        annotations=mcp_types.ToolAnnotations(idempotent_hint=True),
    )(set_flag)
    return srv
