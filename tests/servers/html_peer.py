"""A fastmcp server whose self-description is hostile HTML, for the console's escaping tests.

Run: ``python -m tests.servers.html_peer --port P``; endpoint ``http://127.0.0.1:P/mcp``.
Its instructions, a tool's title and description and a prompt's description all carry markup
that must reach the page as text, never as HTML.
"""

from __future__ import annotations

from fastmcp import FastMCP

from tests.peers._common import MCP_PATH, PeerHarness, base_parser, serve

INSTRUCTIONS = "<script>alert('instructions')</script> Use <b>care</b> & read the docs."
TOOL_DESCRIPTION = '<img src=x onerror="alert(1)"> Says hello.'


def build_server() -> FastMCP:
    mcp = FastMCP("<i>html-peer</i>", instructions=INSTRUCTIONS)

    @mcp.tool(title="<u>Hello</u>", description=TOOL_DESCRIPTION)
    def hello(name: str = "world") -> str:
        return f"Hello, {name}!"

    @mcp.prompt(description="<marquee>prompt</marquee>")
    def tagged(topic: str) -> str:
        return f"About {topic}."

    return mcp


def main() -> None:
    args = base_parser(__doc__ or "").parse_args()
    serve(PeerHarness(build_server().http_app(path=MCP_PATH)), args.host, args.port)


if __name__ == "__main__":
    main()
