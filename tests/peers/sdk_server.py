"""A real official-SDK (``mcp`` 2.3) ``MCPServer`` speaking MCP 2026-07-28, for client tests.

Run: ``python -m tests.peers.sdk_server --port 8124 [--json-response] [--page-size 2]
[--state-ttl 600] [--state-key K]``. The endpoint is ``http://127.0.0.1:<port>/mcp``.

Differences from the fastmcp peer that tests can rely on:
- elicitation runs through the SDK's resolver machinery (``Resolve``/``Elicit``), so the
  inputRequests keys are ``<module>:<resolver>``; started with ``python -m`` the module is
  ``__main__`` (``__main__:ask_name`` ...);
- the SDK transport validates ``Mcp-Param-*`` headers against the tool schema (-32020 on a
  missing or mismatching header) and rejects a resolver-driven elicitation with -32021 when
  the request did not declare ``elicitation``;
- ``--json-response`` never answers with SSE (progress notifications are dropped); without it
  the SDK commits to SSE on the first notification (or after 15 s) and otherwise answers JSON;
- MCPServer has no pagination of its own: a middleware here pages every list with
  ``--page-size`` items and cursors ``""`` (page 2, a valid empty-string cursor), then
  ``"page-3"``, ``"page-4"``...; an unknown cursor is -32602 "Invalid cursor".
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from mcp.server.elicitation import AcceptedElicitation, ElicitationResult
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.resolve import Elicit, Resolve
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, Field

from tests.peers._common import (
    MCP_PATH,
    PeerHarness,
    add_state_options,
    base_parser,
    request_state_security,
    serve,
)

SERVER_NAME = "mrtrweb-sdk-peer"
LIST_KEYS = {
    "tools/list": "tools",
    "prompts/list": "prompts",
    "resources/list": "resources",
    "resources/templates/list": "resourceTemplates",
}


class Name(BaseModel):
    name: str


class Age(BaseModel):
    age: int


class PartySize(BaseModel):
    people: int = Field(ge=1, le=20)


class Slot(BaseModel):
    time: str


class Confirm(BaseModel):
    sure: bool


def ask_name() -> Elicit[Name]:
    return Elicit("What is your name?", Name)


def ask_age(name: Annotated[Name, Resolve(ask_name)]) -> Elicit[Age]:
    # Depending on ask_name forces a second round: this question needs the first answer.
    return Elicit(f"How old are you, {name.name}?", Age)


def ask_party_size() -> Elicit[PartySize]:
    return Elicit("How many people?", PartySize)


def ask_time() -> Elicit[Slot]:
    return Elicit("What time?", Slot)


class Budget(BaseModel):
    amount: int = Field(ge=0)


class Schedule(BaseModel):
    start: str


def ask_budget() -> Elicit[Budget]:
    return Elicit("What is the budget?", Budget)


def ask_schedule() -> Elicit[Schedule]:
    return Elicit("When does it start?", Schedule)


def ask_confirm(path: str) -> Elicit[Confirm]:
    return Elicit(f"Really delete {path}?", Confirm)


def cursor_for(page: int) -> str:
    return "" if page == 1 else f"page-{page}"


def page_of(cursor: Any) -> int:
    if cursor is None:
        return 0
    if cursor == "":
        return 1
    if isinstance(cursor, str) and cursor.startswith("page-") and cursor[5:].isdigit():
        page = int(cursor[5:])
        if page >= 2:
            return page
    raise MCPError(code=-32602, message="Invalid cursor")


def paginator(size: int) -> Any:
    async def paginate(ctx: Any, call_next: Any) -> Any:
        key = LIST_KEYS.get(ctx.method)
        if key is None:
            return await call_next(ctx)
        page = page_of((ctx.params or {}).get("cursor"))
        result = await call_next(ctx)
        if not isinstance(result, dict):
            result = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        items = list(result.get(key, []))
        if page and page * size >= len(items):
            raise MCPError(code=-32602, message="Invalid cursor")
        paged = {k: v for k, v in result.items() if k != "nextCursor"}
        paged[key] = items[page * size : (page + 1) * size]
        if (page + 1) * size < len(items):
            paged["nextCursor"] = cursor_for(page + 1)
        return paged

    return paginate


def build_server(page_size: int, state_ttl: float, state_key: str | None) -> MCPServer:
    srv = MCPServer(
        SERVER_NAME,
        version="2.3.0",
        instructions="Official-SDK test peer for mrtrweb.",
        request_state_security=request_state_security(state_ttl, state_key, SERVER_NAME),
        log_level="WARNING",
    )
    srv.middleware.append(paginator(page_size))

    @srv.tool(description="Return the text unchanged.")
    def echo(text: str) -> str:
        return text

    @srv.tool(description="Two rounds through resolvers: name, then age.")
    def greet(
        city: str,
        name: Annotated[Name, Resolve(ask_name)],
        age: Annotated[Age, Resolve(ask_age)],
    ) -> str:
        return f"{name.name} {age.age} {city}"

    @srv.tool(description="Two independent resolvers, asked together in one round.")
    def book_table(
        restaurant: str,
        party: Annotated[PartySize, Resolve(ask_party_size)],
        slot: Annotated[Slot, Resolve(ask_time)],
    ) -> str:
        return f"Table at {restaurant} for {party.people} at {slot.time}"

    @srv.tool(description="Budget and schedule asked together in one round (split rounds).")
    def plan_quarter(
        project: str,
        budget: Annotated[Budget, Resolve(ask_budget)],
        schedule: Annotated[Schedule, Resolve(ask_schedule)],
    ) -> str:
        return f"{project}: budget {budget.amount}, starting {schedule.start}"

    @srv.tool(description="Ask for confirmation; decline/cancel are results, not errors.")
    def confirm_delete(
        path: str, outcome: Annotated[ElicitationResult[Confirm], Resolve(ask_confirm)]
    ) -> str:
        if isinstance(outcome, AcceptedElicitation) and outcome.data.sure:
            return f"deleted {path}"
        return f"kept {path} ({outcome.action})"

    @srv.tool(description="x-mcp-header tool: Region, Priority, Dry-Run; reports what arrived.")
    def route_request(
        ctx: Context,
        region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})],
        priority: Annotated[int, Field(json_schema_extra={"x-mcp-header": "Priority"})] = 5,
        dry_run: Annotated[bool, Field(json_schema_extra={"x-mcp-header": "Dry-Run"})] = False,
        note: str = "",
    ) -> dict[str, Any]:
        headers = {k.lower(): v for k, v in (ctx.headers or {}).items()}
        return {
            "arguments": {"region": region, "priority": priority, "dry_run": dry_run, "note": note},
            "mcp_param_headers": {k: v for k, v in headers.items() if k.startswith("mcp-param-")},
        }

    @srv.tool(description="Progress notifications (and one log message), then a result.")
    async def slow_progress(ctx: Context, steps: int = 3, delay: float = 0.05) -> str:
        for step in range(1, steps + 1):
            await ctx.report_progress(step, steps, f"step {step} of {steps}")
            if step == 1:
                await ctx.info(f"slow_progress started ({steps} steps)")
            await asyncio.sleep(delay)
        return f"done after {steps} steps"

    @srv.tool(description="Report the HTTP headers this request carried.")
    def request_info(ctx: Context) -> dict[str, Any]:
        return {"headers": {k.lower(): v for k, v in (ctx.headers or {}).items()}}

    @srv.prompt(description="Plain prompt without arguments.")
    def plain_prompt() -> str:
        return "Just a plain prompt."

    @srv.prompt(description="Plain prompt with one argument.")
    def greeting_prompt(name: str) -> str:
        return f"Say hello to {name}."

    @srv.prompt(description="Plain prompt with one argument.")
    def summary_prompt(text: str) -> str:
        return f"Summarise: {text}"

    for number in range(1, 4):
        srv.resource(f"peer://static/{number}", name=f"static-{number}", mime_type="text/plain")(
            _static(number)
        )

    @srv.resource("peer://items/{item_id}", mime_type="text/plain")
    def item(item_id: str) -> str:
        return f"item {item_id}"

    @srv.resource("peer://users/{user_id}", mime_type="text/plain")
    def user(user_id: str) -> str:
        return f"user {user_id}"

    @srv.resource("peer://logs/{day}", mime_type="text/plain")
    def log(day: str) -> str:
        return f"log {day}"

    return srv


def _static(number: int) -> Any:
    def read() -> str:
        return f"static resource {number}"

    read.__name__ = f"static_{number}"
    return read


def main() -> None:
    parser = base_parser(__doc__ or "")
    add_state_options(parser)
    parser.set_defaults(page_size=2)
    parser.add_argument("--json-response", action="store_true", help="never answer with SSE")
    parser.add_argument(
        "--extra-tools", choices=["renewal"], default=None, help="tests/peers/_renewal_tools.py"
    )
    args = parser.parse_args()
    srv = build_server(args.page_size, args.state_ttl, args.state_key)
    if args.extra_tools == "renewal":
        from tests.peers._renewal_tools import register_sdk

        register_sdk(srv)
    app = srv.streamable_http_app(streamable_http_path=MCP_PATH, json_response=args.json_response)
    serve(PeerHarness(app), args.host, args.port)


if __name__ == "__main__":
    main()
