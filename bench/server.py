"""The MCP server the benchmarks talk to: one tool that asks one yes/no question, then completes.

Run: ``python -m bench.server --port 8123`` (endpoint ``http://127.0.0.1:8123/mcp``). Built with
fastmcp like a real server: the ``requestState`` it mints is sealed by the SDK's
``RequestStateBoundary`` and verified on the retry, so every round costs what it costs in
production. Nothing is recorded (unlike ``tests/peers``): the server should be the floor.
"""

from __future__ import annotations

import argparse
import json

import mcp_types
from fastmcp import Context, FastMCP
from fastmcp.tools import ToolResult
from mcp.server.request_state import RequestStateSecurity

SERVER_NAME = "mrtrweb-bench"
TOOL = "confirm"
QUESTION_KEY = "confirm"


def build_server() -> FastMCP:
    mcp = FastMCP(
        SERVER_NAME,
        instructions="Benchmark server: `confirm` asks one yes/no question, then completes.",
        request_state_security=RequestStateSecurity.ephemeral(ttl=3600.0, audience=SERVER_NAME),
    )

    @mcp.tool(description="Ask one yes/no question, then complete with the answer.")
    def confirm(ctx: Context, action: str = "deploy"):
        reply = (ctx.input_responses or {}).get(QUESTION_KEY)
        if not isinstance(reply, mcp_types.ElicitResult):
            schema = {
                "type": "object",
                "properties": {"ok": {"type": "boolean", "title": "OK"}},
                "required": ["ok"],
            }
            request = mcp_types.ElicitRequest(
                params=mcp_types.ElicitRequestFormParams(
                    message=f"Go ahead with {action}?", requested_schema=schema
                )
            )
            return mcp_types.InputRequiredResult(
                input_requests={QUESTION_KEY: request},
                request_state=json.dumps({"asked": action}),
            )
        ok = reply.action == "accept" and bool((reply.content or {}).get("ok"))
        return ToolResult(
            content=f"{action}: {'confirmed' if ok else 'not confirmed'}",
            structured_content={"confirmed": ok, "action": reply.action},
        )

    return mcp


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--host", default="127.0.0.1")
    args = parser.parse_args(argv)
    build_server().run(
        transport="http",
        host=args.host,
        port=args.port,
        path="/mcp",
        show_banner=False,
        log_level="warning",
    )


if __name__ == "__main__":
    main()
