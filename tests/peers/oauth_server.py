"""A real fastmcp 4.1 server behind a real OAuth 2.1 authorization server, on loopback.

Run: ``python -m tests.peers.oauth_server --port P [--access-ttl 5] [--refresh-ttl S]
[--scopes "mcp:tools"] [--no-dcr] [--cimd] [--client ID:SECRET[:METHOD]] [--state-ttl S]
[--state-key K] [--json-response]``.

One process is both the protected resource (``http://127.0.0.1:P/mcp``, MCP 2026-07-28)
and its authorization server (issuer ``http://127.0.0.1:P/``): fastmcp's
``InMemoryOAuthProvider``, extended in ``oauth_provider.py``, serves RFC 9728 protected
resource metadata, RFC 8414 / OpenID discovery, dynamic client registration, the
authorization code grant with PKCE, refresh-token rotation and revocation, and approves every
authorization request at once (straight back to ``redirect_uri`` with ``code``, ``state`` and
``iss``), so a browser and a headless client both complete it. ``oauth_front.py`` logs every
call with the grant its token belongs to and serves the test controls (``/_test/...``).
Everything is described in tests/peers/README.md.
"""

from __future__ import annotations

import mcp_types
from fastmcp import Context, FastMCP
from fastmcp.server.dependencies import get_access_token
from fastmcp.tools import ToolResult

from tests.peers._common import (
    MCP_PATH,
    PeerHarness,
    add_state_options,
    base_parser,
    form_request,
    input_required,
    load_state,
    request_state_security,
    serve,
)
from tests.peers.fastmcp_server import register_simple_tools, require_elicitation
from tests.peers.oauth_front import OAuthFront
from tests.peers.oauth_provider import PeerOAuthProvider

SERVER_NAME = "mrtrweb-oauth-peer"
DEFAULT_SCOPES = "mcp:tools"

APPROVAL_SCHEMA = {
    "approve": {"type": "boolean", "title": "Approve", "default": False},
    "note": {"type": "string", "title": "Note"},
}


def caller() -> dict[str, object]:
    """Who the bearer token of the current request belongs to."""
    token = get_access_token()
    if token is None:
        return {"subject": None, "client_id": None, "grant": None, "scopes": []}
    claims = token.claims or {}
    return {
        "subject": token.subject,
        "client_id": token.client_id,
        "grant": claims.get("grant"),
        "scopes": list(token.scopes),
    }


def register_oauth_tools(mcp: FastMCP) -> None:
    @mcp.tool(description="Say whose token this call carried (subject, client, grant).")
    def whoami() -> dict[str, object]:
        return caller()

    @mcp.tool(description="Ask someone to approve an action, then do it as the caller.")
    def request_approval(ctx: Context, action: str) -> ToolResult | mcp_types.InputRequiredResult:
        state = load_state(ctx.request_state)
        responses = ctx.input_responses or {}
        reply = responses.get("approval")
        if state.get("step") != "approval" or not isinstance(reply, mcp_types.ElicitResult):
            require_elicitation(ctx)
            return input_required(
                {"approval": form_request(f"Approve: {action}?", APPROVAL_SCHEMA, ["approve"])},
                {"step": "approval", "asked_by": caller()["subject"]},
            )
        who = caller()
        content = dict(reply.content or {})
        approved = reply.action == "accept" and content.get("approve") is True
        verdict = "approved" if approved else "not approved"
        return ToolResult(
            content=f"{action}: {verdict}; ran as {who['subject']} (grant {who['grant']})",
            structured_content={
                "action": action,
                "status": verdict,
                "asked_by": state.get("asked_by"),
                "ran_as": who,
                "answers": content,
            },
        )


def build_server(
    provider: PeerOAuthProvider, state_ttl: float, state_key: str | None, page_size: int
) -> FastMCP:
    mcp = FastMCP(
        SERVER_NAME,
        instructions="Test peer for mrtrweb: an MCP server behind OAuth 2.1.",
        auth=provider,
        list_page_size=page_size,
        request_state_security=request_state_security(state_ttl, state_key, SERVER_NAME),
    )
    register_simple_tools(mcp)
    register_oauth_tools(mcp)
    return mcp


def main() -> None:
    parser = base_parser(__doc__ or "")
    add_state_options(parser)
    parser.set_defaults(page_size=50)
    parser.add_argument("--access-ttl", type=float, default=3600.0, help="seconds")
    parser.add_argument("--refresh-ttl", type=float, default=None, help="seconds; default never")
    parser.add_argument("--scopes", default=DEFAULT_SCOPES, help="space-separated")
    parser.add_argument("--no-dcr", action="store_true", help="no dynamic client registration")
    parser.add_argument("--cimd", action="store_true", help="accept client ID metadata documents")
    parser.add_argument("--json-response", action="store_true", help="never answer with SSE")
    parser.add_argument(
        "--client",
        action="append",
        default=[],
        metavar="ID:SECRET[:METHOD]",
        help="a pre-registered client (client_secret_basic unless METHOD says otherwise)",
    )
    args = parser.parse_args()
    base_url = f"http://{args.host}:{args.port}"
    provider = PeerOAuthProvider(
        base_url=base_url,
        resource_url=f"{base_url}{MCP_PATH}",
        scopes=args.scopes.split(),
        access_ttl=args.access_ttl,
        refresh_ttl=args.refresh_ttl,
        dcr=not args.no_dcr,
        cimd=args.cimd,
    )
    for spec in args.client:
        client_id, secret, method = [*spec.split(":", 2), "client_secret_basic"][:3]
        provider.preregister(client_id, secret, method)
    mcp = build_server(provider, args.state_ttl, args.state_key, args.page_size)
    app = mcp.http_app(path=MCP_PATH, json_response=args.json_response or None)
    serve(OAuthFront(app, PeerHarness(app), provider), args.host, args.port)


if __name__ == "__main__":
    main()
