"""The fastmcp test peer plus one tool that streams progress while working on an answer.

Run: ``python -m tests.live.progress_peer --port P``. Everything of ``tests.peers.fastmcp_server``
is there, and ``confirm_then_work(steps=3, delay=0.3)``: the first call asks ``confirm``
({``go``: boolean}) with a requestState; the retry with ``go: true`` reports
``notifications/progress`` ``{"progress": i, "total": steps, "message": "<b>step</b> i of
steps"}`` for i = 1..steps, ``delay`` seconds apart (when the request has a progressToken, as
the SDK sends them), then answers ``"worked {steps} steps"``. The message carries markup so
tests can prove it is escaped.
"""

from __future__ import annotations

import asyncio

from fastmcp import Context, FastMCP

from tests.peers._common import (
    MCP_PATH,
    PeerHarness,
    add_state_options,
    base_parser,
    form_request,
    input_required,
    load_state,
    serve,
)
from tests.peers.fastmcp_server import answer, build_server, require_elicitation


def register(mcp: FastMCP) -> None:
    @mcp.tool(description="Ask for a go-ahead, then work in steps, reporting progress.")
    async def confirm_then_work(ctx: Context, steps: int = 3, delay: float = 0.3):
        state = load_state(ctx.request_state)
        reply = answer(ctx, "confirm")
        if state.get("step") != "confirm" or reply is None:
            require_elicitation(ctx)
            return input_required(
                {
                    "confirm": form_request(
                        f"Work {steps} steps?", {"go": {"type": "boolean", "title": "Go"}}, ["go"]
                    )
                },
                {"step": "confirm"},
            )
        if reply.action != "accept" or not (reply.content or {}).get("go"):
            return "not working"
        for step in range(1, steps + 1):
            await ctx.report_progress(step, steps, f"<b>step</b> {step} of {steps}")
            await asyncio.sleep(delay)
        return f"worked {steps} steps"


def main() -> None:
    parser = base_parser(__doc__ or "")
    add_state_options(parser)
    args = parser.parse_args()
    mcp = build_server(args.page_size, args.state_ttl, args.state_key)
    register(mcp)
    serve(PeerHarness(mcp.http_app(path=MCP_PATH)), args.host, args.port)


if __name__ == "__main__":
    main()
