"""A real fastmcp 4.1 server speaking MCP 2026-07-28 over Streamable HTTP, for client tests.

Run: ``python -m tests.peers.fastmcp_server --port 8123 [--state-ttl 2] [--page-size 3]
[--state-key K] [--json-response]``. The endpoint is ``http://127.0.0.1:<port>/mcp``.
Every tool, prompt and resource is described in ``tests/peers/README.md``.

fastmcp's imperative ``ctx.elicit()`` raises on 2026-07-28 requests, so every multi-round flow
here returns an ``mcp_types.InputRequiredResult`` from the handler body and reads
``ctx.input_responses`` / ``ctx.request_state`` on the retry. fastmcp installs the SDK's
``RequestStateBoundary``: the plaintext state minted here is sealed (AES-GCM, bound to the
method, name/uri, the arguments digest and the audience, with a TTL) on the way out and
verified before the handler runs on the way back; a bad echo is answered -32602
"Invalid or expired requestState" with HTTP 400.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Annotated, Any, Literal

import mcp_types
from fastmcp import Context, FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.server.dependencies import get_http_headers
from fastmcp.tools import ToolResult
from pydantic import BaseModel, Field

from tests.peers._common import (
    AUTHORIZE_PATH,
    AUTHORIZE_VISITS,
    MCP_PATH,
    PeerHarness,
    add_state_options,
    base_parser,
    form_request,
    input_required,
    load_state,
    missing_capability,
    request_state_security,
    serve,
    supports_elicitation,
    url_request,
)

SERVER_NAME = "mrtrweb-fastmcp-peer"

# Set by main(): URL-mode elicitations point back at this process's /authorize route.
BASE_URL = {"value": "http://127.0.0.1"}


def header(name: str, **extra: Any) -> Any:
    """Pydantic field metadata carrying an ``x-mcp-header`` annotation."""
    return Field(json_schema_extra={"x-mcp-header": name, **extra})


def require_elicitation(ctx: Context, mode: str = "form") -> None:
    # fastmcp does not gate hand-built InputRequiredResults on the declared capabilities;
    # the spec says a server MUST NOT send a kind the client did not declare.
    if not supports_elicitation(ctx.session.client_capabilities, mode):
        raise missing_capability(mode)


def answer(ctx: Context, key: str) -> mcp_types.ElicitResult | None:
    responses = ctx.input_responses or {}
    value = responses.get(key)
    return value if isinstance(value, mcp_types.ElicitResult) else None


def result(text: str, structured: dict[str, Any]) -> ToolResult:
    return ToolResult(content=text, structured_content=structured)


def plan_requests(project: str) -> dict[str, Any]:
    """A project plan's two questions, keyed as split routes name them: budget and schedule."""
    return {
        "budget": form_request(
            f"Budget for {project}?",
            {"amount": {"type": "integer", "title": "Amount (EUR)", "minimum": 0}},
            ["amount"],
        ),
        "schedule": form_request(
            f"When does {project} start?",
            {"start": {"type": "string", "title": "Start date", "format": "date"}},
            ["start"],
        ),
    }


def build_server(
    page_size: int,
    state_ttl: float,
    state_key: str | None,
    cache_ttl: int | None = None,
    cache_scope: Literal["public", "private"] | None = None,
) -> FastMCP:
    mcp = FastMCP(
        SERVER_NAME,
        instructions="Test peer for mrtrweb: tools, prompts and resources that exercise MRTR.",
        list_page_size=page_size,
        request_state_security=request_state_security(state_ttl, state_key, SERVER_NAME),
        cache_ttl=cache_ttl,
        cache_scope=cache_scope,
    )
    register_simple_tools(mcp)
    register_header_tools(mcp)
    register_flow_tools(mcp)
    register_prompts(mcp)
    register_resources(mcp)
    return mcp


# --------------------------------------------------------------------------- simple tools


def register_simple_tools(mcp: FastMCP) -> None:
    @mcp.tool(description="Return the text unchanged.")
    def echo(text: str) -> str:
        return text

    @mcp.tool(name="héllo_wörld", description="A tool whose name is not ASCII.")
    def hello_world(name: str = "wörld") -> str:
        return f"Héllo, {name}!"

    @mcp.tool(description="Add two integers.")
    def add(a: int, b: int) -> int:
        return a + b

    @mcp.tool(description="Always fails with a tool error (isError result).")
    def fail(message: str = "this tool always fails") -> str:
        raise ToolError(message)

    @mcp.tool(description="Sleep for the given seconds, then answer.")
    async def sleep(seconds: float = 1.0) -> str:
        await asyncio.sleep(seconds)
        return f"slept {seconds}"

    @mcp.tool(
        description=(
            "Report progress (and a log message) while working. With a progressToken the "
            "response is an SSE stream; without one it is plain JSON."
        )
    )
    async def slow_progress(ctx: Context, steps: int = 3, delay: float = 0.05) -> str:
        for step in range(1, steps + 1):
            await ctx.report_progress(step, steps, f"step {step} of {steps}")
            if step == 1:
                await ctx.info(f"slow_progress started ({steps} steps)")
            await asyncio.sleep(delay)
        return f"done after {steps} steps"

    @mcp.tool(description="Report the HTTP headers and the params._meta this request carried.")
    def request_info(ctx: Context) -> dict[str, Any]:
        rc = ctx.request_context
        meta = dict(rc.meta or {}) if rc is not None else {}
        return {"headers": get_http_headers(include_all=True), "meta": meta}


# --------------------------------------------------------------------------- x-mcp-header


class Target(BaseModel):
    region: Annotated[str, header("Target-Region")]
    zone: str = "a"


def register_header_tools(mcp: FastMCP) -> None:
    @mcp.tool(
        description=(
            "Route a request. region/priority/dry_run are mirrored into Mcp-Param-Region, "
            "Mcp-Param-Priority and Mcp-Param-Dry-Run; the result reports what arrived."
        )
    )
    def route_request(
        region: Annotated[str, header("Region")],
        priority: Annotated[int, header("Priority")] = 5,
        dry_run: Annotated[bool, header("Dry-Run")] = False,
        note: str = "",
    ) -> dict[str, Any]:
        headers = get_http_headers(include_all=True)
        return {
            "arguments": {
                "region": region,
                "priority": priority,
                "dry_run": dry_run,
                "note": note,
            },
            "mcp_param_headers": {k: v for k, v in headers.items() if k.startswith("mcp-param-")},
            "headers": headers,
        }

    @mcp.tool(description="A valid nested annotation: target.region -> Mcp-Param-Target-Region.")
    def nested_header(target: Target) -> dict[str, Any]:
        headers = get_http_headers(include_all=True)
        return {
            "arguments": {"target": target.model_dump()},
            "mcp_param_headers": {k: v for k, v in headers.items() if k.startswith("mcp-param-")},
        }

    # Each of these is listed by the server but carries an invalid annotation, so a correct
    # 2026 client drops it from its tools/list result (fastmcp itself does not check).
    @mcp.tool(description="INVALID: x-mcp-header on a number property.")
    def bad_header_number(amount: Annotated[float, header("Amount")]) -> str:
        return f"amount {amount}"

    @mcp.tool(description="INVALID: x-mcp-header inside array items (not a properties path).")
    def bad_header_array(tags: list[Annotated[str, header("Tag")]]) -> str:
        return ",".join(tags)

    @mcp.tool(description="INVALID: two properties share one header name (case-insensitive).")
    def bad_header_duplicate(
        first: Annotated[str, header("Dup")], second: Annotated[str, header("dup")]
    ) -> str:
        return first + second

    @mcp.tool(description="INVALID: the header name is not an RFC 9110 token.")
    def bad_header_token(value: Annotated[str, header("Bad Header")]) -> str:
        return value


# --------------------------------------------------------------------------- multi-round flows

DEPLOY_SCHEMA: dict[str, Any] = {
    "approve": {
        "type": "boolean",
        "title": "Approve the deployment",
        "description": "Tick to go ahead.",
        "default": False,
    },
    "replicas": {
        "type": "integer",
        "title": "Replicas",
        "minimum": 1,
        "maximum": 10,
        "default": 2,
    },
    "canary_percent": {
        "type": "number",
        "title": "Canary traffic (%)",
        "minimum": 0,
        "maximum": 100,
    },
    "window": {
        "type": "string",
        "title": "Deployment window",
        "oneOf": [
            {"const": "now", "title": "Right now"},
            {"const": "tonight", "title": "Tonight at 22:00"},
            {"const": "weekend", "title": "This weekend"},
        ],
        "default": "now",
    },
    "notify": {
        "type": "array",
        "title": "Notify",
        "items": {
            "anyOf": [
                {"const": "ops", "title": "Operations"},
                {"const": "dev", "title": "Developers"},
                {"const": "qa", "title": "QA"},
            ]
        },
    },
    "contact": {"type": "string", "title": "Contact e-mail", "format": "email"},
    "reason": {"type": "string", "title": "Reason", "minLength": 3, "maxLength": 200},
}
DEPLOY_REQUIRED = ["approve", "replicas", "window"]

ALL_KINDS_SCHEMA: dict[str, Any] = {
    "text": {"type": "string", "title": "Free text", "minLength": 1, "maxLength": 50},
    "email": {"type": "string", "format": "email"},
    "website": {"type": "string", "format": "uri"},
    "birthday": {"type": "string", "format": "date"},
    "meeting": {"type": "string", "format": "date-time"},
    "count": {"type": "integer", "minimum": 0, "maximum": 100, "default": 3},
    "ratio": {"type": "number", "minimum": 0, "maximum": 1},
    "agree": {"type": "boolean", "default": True},
    "size": {"type": "string", "enum": ["small", "medium", "large"]},
    "color": {
        "type": "string",
        "oneOf": [
            {"const": "#f00", "title": "Red"},
            {"const": "#0f0", "title": "Green"},
        ],
    },
    "legacy": {"type": "string", "enum": ["a", "b"], "enumNames": ["Option A", "Option B"]},
    "toppings": {
        "type": "array",
        "items": {"type": "string", "enum": ["cheese", "ham", "olives"]},
        "minItems": 1,
        "maxItems": 2,
    },
    "days": {
        "type": "array",
        "items": {
            "anyOf": [{"const": "mon", "title": "Monday"}, {"const": "tue", "title": "Tuesday"}]
        },
        "default": ["mon"],
    },
}


def _check_deploy_answers(content: dict[str, Any]) -> None:
    def bad(field: str, why: str) -> ToolError:
        return ToolError(f"invalid answer: {field}: {why}")

    for field in DEPLOY_REQUIRED:
        if field not in content:
            raise bad(field, "missing")
    if not isinstance(content["approve"], bool):
        raise bad("approve", "expected a boolean")
    replicas = content["replicas"]
    if isinstance(replicas, bool) or not isinstance(replicas, int) or not 1 <= replicas <= 10:
        raise bad("replicas", "expected an integer between 1 and 10")
    canary = content.get("canary_percent")
    if canary is not None and (isinstance(canary, bool) or not isinstance(canary, int | float)):
        raise bad("canary_percent", "expected a number")
    if content["window"] not in {"now", "tonight", "weekend"}:
        raise bad("window", "not one of the options")
    notify = content.get("notify")
    if notify is not None and (
        not isinstance(notify, list) or not set(notify) <= {"ops", "dev", "qa"}
    ):
        raise bad("notify", "expected a list of option values")


def register_flow_tools(mcp: FastMCP) -> None:
    @mcp.tool(description="Ask one form (several field kinds), then deploy.")
    def approve_deploy(ctx: Context, service: str, environment: str = "staging"):
        state = load_state(ctx.request_state)
        reply = answer(ctx, "approval")
        if state.get("step") != "approval" or reply is None:
            require_elicitation(ctx)
            return input_required(
                {
                    "approval": form_request(
                        f"Deploy {service} to {environment}?", DEPLOY_SCHEMA, DEPLOY_REQUIRED
                    )
                },
                {"step": "approval", "service": service},
            )
        base = {"service": service, "environment": environment}
        if reply.action != "accept":
            status = "declined" if reply.action == "decline" else "cancelled"
            return result(f"Deployment of {service} {status}", {**base, "status": status})
        content = dict(reply.content or {})
        _check_deploy_answers(content)
        if not content["approve"]:
            return result(
                f"Deployment of {service} not approved",
                {**base, "status": "rejected", "answers": content},
            )
        return result(
            f"Deployed {service} to {environment}: {content['replicas']} replicas, "
            f"window {content['window']}",
            {**base, "status": "deployed", "answers": content},
        )

    @mcp.tool(description="Two rounds: shipping, then payment; the result uses both answers.")
    def purchase(ctx: Context, item: str, quantity: int = 1):
        state = load_state(ctx.request_state)
        step = state.get("step")
        if step == "shipping":
            reply = answer(ctx, "shipping")
            if reply is not None:
                if reply.action != "accept":
                    return result(
                        f"Purchase of {item} cancelled at shipping",
                        {"status": reply.action, "round": 1},
                    )
                shipping = dict(reply.content or {})
                return ask_payment(ctx, item, quantity, shipping)
        elif step == "payment":
            reply = answer(ctx, "payment")
            shipping = state["shipping"]
            if reply is None:
                return ask_payment(ctx, item, quantity, shipping)
            if reply.action != "accept":
                return result(
                    f"Purchase of {item} cancelled at payment",
                    {"status": reply.action, "round": 2, "shipping": shipping},
                )
            payment = dict(reply.content or {})
            if not payment.get("confirm"):
                return result(
                    f"Purchase of {item} not confirmed",
                    {"status": "unconfirmed", "shipping": shipping, "payment": payment},
                )
            coupon = payment.get("coupon") or "none"
            return result(
                f"Purchased {quantity} x {item}, shipping to {shipping['address']} "
                f"(express={str(bool(shipping.get('express'))).lower()}), coupon={coupon}",
                {
                    "status": "purchased",
                    "item": item,
                    "quantity": quantity,
                    "shipping": shipping,
                    "payment": payment,
                },
            )
        require_elicitation(ctx)
        return input_required(
            {
                "shipping": form_request(
                    f"Where should we ship {quantity} x {item}?",
                    {
                        "address": {"type": "string", "title": "Address", "minLength": 1},
                        "express": {"type": "boolean", "title": "Express", "default": False},
                    },
                    ["address"],
                )
            },
            {"step": "shipping"},
        )

    def ask_payment(ctx: Context, item: str, quantity: int, shipping: dict[str, Any]):
        require_elicitation(ctx)
        return input_required(
            {
                "payment": form_request(
                    f"Confirm payment for {quantity} x {item} to {shipping.get('address')}",
                    {
                        "confirm": {"type": "boolean", "title": "Confirm payment"},
                        "coupon": {"type": "string", "title": "Coupon code"},
                    },
                    ["confirm"],
                )
            },
            {"step": "payment", "shipping": shipping},
        )

    @mcp.tool(description="One round with two inputRequests: 'name' and 'color'.")
    def two_questions(ctx: Context, topic: str = "colors"):
        state = load_state(ctx.request_state)
        known: dict[str, Any] = dict(state.get("known", {}))
        if state.get("step") == "ask":
            for key in ("name", "color"):
                reply = answer(ctx, key)
                if reply is None or key in known:
                    continue
                if reply.action != "accept":
                    return result(f"{key}: {reply.action}", {"status": reply.action, "key": key})
                known[key] = (reply.content or {}).get(key)
        questions = {
            "name": form_request(
                "What is your name?",
                {"name": {"type": "string", "title": "Name"}},
                ["name"],
            ),
            "color": form_request(
                f"Pick a favourite ({topic})",
                {"color": {"type": "string", "enum": ["red", "green", "blue"]}},
                ["color"],
            ),
        }
        missing = {key: q for key, q in questions.items() if known.get(key) is None}
        if missing:
            require_elicitation(ctx)
            return input_required(missing, {"step": "ask", "known": known})
        return result(f"{known['name']} likes {known['color']}", {"status": "done", **known})

    @mcp.tool(
        description="One round with two inputRequests, 'budget' and 'schedule' (split rounds)."
    )
    def plan_budget_schedule(ctx: Context, project: str = "Atlas"):
        # Both keys asked in one round, and both answers expected in the one retry: a client
        # that splits the round between people must still send every answer under its key.
        if load_state(ctx.request_state).get("step") == "ask":
            replies = {key: answer(ctx, key) for key in ("budget", "schedule")}
            actions = {
                key: (r.action if r is not None else "missing") for key, r in replies.items()
            }
            if any(action != "accept" for action in actions.values()):
                return result(f"{project}: not planned", {"status": "declined", "actions": actions})
            budget = (replies["budget"].content or {}).get("amount")  # type: ignore[union-attr]
            start = (replies["schedule"].content or {}).get("start")  # type: ignore[union-attr]
            return result(
                f"{project}: budget {budget}, starting {start}",
                {"status": "done", "budget": budget, "start": start, "actions": actions},
            )
        require_elicitation(ctx)
        return input_required(
            plan_requests(project),
            {"step": "ask"},
        )

    @mcp.tool(
        description=(
            "Two rounds: 'budget' and 'schedule' together, then 'confirm' alone (or 'confirm' "
            "first, with confirm_first)."
        )
    )
    def plan_and_confirm(ctx: Context, project: str = "Atlas", confirm_first: bool = False):
        # A split round beside a round of one question, in either order: who sees which
        # round of one call. The result names no answer, so a page showing it leaks none.
        plan = plan_requests(project)
        confirm = {
            "confirm": form_request(
                f"Go ahead with {project}?",
                {
                    "ok": {"type": "boolean", "title": "Go ahead"},
                    "note": {"type": "string", "title": "Note"},
                },
                ["ok"],
            )
        }
        steps = [confirm, plan] if confirm_first else [plan, confirm]
        state = load_state(ctx.request_state)
        done = int(state.get("done", 0))
        asked = steps[done] if "done" in state else None
        if asked is not None:
            replies = {key: answer(ctx, key) for key in asked}
            if any(r is None for r in replies.values()):
                require_elicitation(ctx)
                return input_required(asked, state)
            actions = {key: r.action for key, r in replies.items() if r is not None}
            if any(action != "accept" for action in actions.values()):
                return result(f"{project}: stopped", {"status": "declined", "actions": actions})
            done += 1
        if done < len(steps):
            require_elicitation(ctx)
            return input_required(steps[done], {"done": done})
        return result(f"{project}: planned", {"status": "done"})

    @mcp.tool(description="Ask 'confirm' WITHOUT a requestState; complete on the retry.")
    def stateless_confirm(ctx: Context, action: str = "proceed"):
        reply = answer(ctx, "confirm")
        if reply is None:
            require_elicitation(ctx)
            return mcp_types.InputRequiredResult(
                input_requests={
                    "confirm": form_request(
                        f"Confirm: {action}?",
                        {"ok": {"type": "boolean", "title": "OK"}},
                        ["ok"],
                    )
                }
            )
        ok = reply.action == "accept" and bool((reply.content or {}).get("ok"))
        return result(
            f"{action}: {'confirmed' if ok else 'not confirmed'}",
            {
                "confirmed": ok,
                "action": reply.action,
                "had_request_state": ctx.request_state is not None,
            },
        )

    @mcp.tool(description="State-only rounds (no inputRequests) until `polls` retries were made.")
    def wait_for_job(ctx: Context, polls: int = 2):
        state = load_state(ctx.request_state)
        done = int(state.get("done", 0)) + (1 if ctx.request_state else 0)
        if done >= polls:
            return result(f"job finished after {done} polls", {"status": "finished", "polls": done})
        return input_required(None, {"done": done})

    @mcp.tool(description="URL-mode elicitation pointing at this peer's /authorize route.")
    def url_login(ctx: Context, provider: str = "example"):
        state = load_state(ctx.request_state)
        reply = answer(ctx, "login")
        ref = state.get("ref")
        if ref is None or reply is None:
            require_elicitation(ctx, "url")
            ref = ref or uuid.uuid4().hex
            return input_required(
                {
                    "login": url_request(
                        f"Sign in to {provider} to continue",
                        f"{BASE_URL['value']}{AUTHORIZE_PATH}?ref={ref}",
                    )
                },
                {"ref": ref},
            )
        base = {"provider": provider, "ref": ref, "visited": AUTHORIZE_VISITS.get(ref, 0) > 0}
        if reply.action != "accept":
            return result(f"Login to {provider} {reply.action}", {**base, "status": reply.action})
        return result(f"Connected to {provider}", {**base, "status": "connected"})

    @mcp.tool(description="One form with every elicitation field kind; echoes content and types.")
    def all_field_kinds(ctx: Context):
        reply = answer(ctx, "form")
        if reply is None:
            require_elicitation(ctx)
            return input_required(
                {"form": form_request("Fill in every kind of field", ALL_KINDS_SCHEMA, ["text"])},
                {"step": "form"},
            )
        content = dict(reply.content or {})
        types = {key: type(value).__name__ for key, value in content.items()}
        return result(
            json.dumps({"action": reply.action, "content": content}, sort_keys=True),
            {"action": reply.action, "content": content, "types": types},
        )

    @mcp.tool(description="Three rounds: name, then team, then confirmation; uses all three.")
    def onboarding(ctx: Context, site: str = "Oslo"):
        state = load_state(ctx.request_state)
        known: dict[str, Any] = dict(state.get("known", {}))
        steps = [
            ("name", form_request("Who is joining?", {"name": {"type": "string"}}, ["name"])),
            (
                "team",
                form_request(
                    "Which team?", {"team": {"type": "string", "enum": ["ops", "dev"]}}, ["team"]
                ),
            ),
            (
                "confirm",
                form_request(f"Create the account at {site}?", {"ok": {"type": "boolean"}}, ["ok"]),
            ),
        ]
        asked = state.get("asked")
        if asked is not None:
            reply = answer(ctx, asked)
            if reply is not None and reply.action != "accept":
                return result(f"onboarding {reply.action}", {"status": reply.action})
            if reply is not None:
                known[asked] = (reply.content or {}).get("ok" if asked == "confirm" else asked)
        for key, question in steps:
            if key not in known:
                require_elicitation(ctx)
                return input_required({key: question}, {"asked": key, "known": known})
        status = "created" if known["confirm"] else "not created"
        return result(
            f"{known['name']} joins {known['team']} at {site}: {status}",
            {"status": status, **known},
        )

    @mcp.tool(description="Asks for sampling and roots, kinds a client must declare first.")
    def ask_undeclared(ctx: Context):
        # Deliberately ignores the declared capabilities (fastmcp does not check hand-built
        # results either), so a client's own guard can be tested.
        if ctx.request_state:
            return result("the client answered anyway", {"status": "answered"})
        return mcp_types.InputRequiredResult(
            input_requests={
                "draft": mcp_types.CreateMessageRequest(
                    params=mcp_types.CreateMessageRequestParams(
                        messages=[
                            mcp_types.SamplingMessage(
                                role="user",
                                content=mcp_types.TextContent(type="text", text="Write a haiku"),
                            )
                        ],
                        max_tokens=50,
                    )
                ),
                "roots": mcp_types.ListRootsRequest(),
            },
            request_state=json.dumps({"step": "undeclared"}),
        )

    @mcp.tool(description="Never completes: every retry asks a new question (q1, q2, ...).")
    def never_done(ctx: Context):
        state = load_state(ctx.request_state)
        n = int(state.get("n", 0)) + 1
        require_elicitation(ctx)
        return input_required(
            {f"q{n}": form_request(f"Question {n}", {"a": {"type": "string"}})}, {"n": n}
        )


# --------------------------------------------------------------------------- prompts


def register_prompts(mcp: FastMCP) -> None:
    @mcp.prompt(description="Asks which review style to use, then renders the prompt.")
    def review_prompt(ctx: Context, topic: str):
        reply = answer(ctx, "style")
        if reply is None or not ctx.request_state:
            require_elicitation(ctx)
            return input_required(
                {
                    "style": form_request(
                        f"Which style of review for {topic}?",
                        {"style": {"type": "string", "enum": ["concise", "detailed"]}},
                        ["style"],
                    )
                },
                {"step": "style"},
            )
        if reply.action != "accept":
            return f"Write a review of {topic}."
        return f"Write a {(reply.content or {}).get('style')} review of {topic}."

    @mcp.prompt(description="Plain prompt with one argument.")
    def greeting_prompt(name: str) -> str:
        return f"Say hello to {name}."

    @mcp.prompt(description="Plain prompt with one argument.")
    def summary_prompt(text: str) -> str:
        return f"Summarise: {text}"

    @mcp.prompt(description="Plain prompt without arguments.")
    def plain_prompt() -> str:
        return "Just a plain prompt."


# --------------------------------------------------------------------------- resources


def register_resources(mcp: FastMCP) -> None:
    @mcp.resource("peer://vault/secret", mime_type="text/plain", description="Asks first.")
    def vault_secret(ctx: Context):
        reply = answer(ctx, "unlock")
        if reply is None or not ctx.request_state:
            require_elicitation(ctx)
            return input_required(
                {
                    "unlock": form_request(
                        "This resource is confidential. Open it?",
                        {"acknowledge": {"type": "boolean", "title": "I understand"}},
                        ["acknowledge"],
                    )
                },
                {"step": "unlock"},
            )
        if reply.action == "accept" and (reply.content or {}).get("acknowledge"):
            return "vault contents: 42"
        return "the vault stays locked"

    for number in range(1, 5):
        mcp.resource(
            f"peer://static/{number}",
            name=f"static-{number}",
            mime_type="text/plain",
        )(_static(number))

    @mcp.resource("peer://items/{item_id}", mime_type="text/plain")
    def item(item_id: str) -> str:
        return f"item {item_id}"

    @mcp.resource("peer://users/{user_id}", mime_type="text/plain")
    def user(user_id: str) -> str:
        return f"user {user_id}"

    @mcp.resource("peer://docs/{section}/{page}", mime_type="text/plain")
    def doc(section: str, page: str) -> str:
        return f"doc {section}/{page}"

    @mcp.resource("peer://logs/{day}", mime_type="text/plain")
    def log(day: str) -> str:
        return f"log {day}"


def _static(number: int) -> Any:
    def read() -> str:
        return f"static resource {number}"

    read.__name__ = f"static_{number}"
    return read


def main() -> None:
    parser = base_parser(__doc__ or "")
    add_state_options(parser)
    parser.add_argument("--json-response", action="store_true", help="never answer with SSE")
    parser.add_argument(
        "--cache-ttl", type=int, default=None, help="seconds; sets ttlMs on cacheable results"
    )
    parser.add_argument("--cache-scope", choices=["public", "private"], default=None)
    parser.add_argument(
        "--extra-tools", choices=["renewal"], default=None, help="tests/peers/_renewal_tools.py"
    )
    parser.add_argument(
        "--set-cookie", default=None, metavar="NAME", help="every answer sets cookie NAME"
    )
    args = parser.parse_args()
    BASE_URL["value"] = f"http://{args.host}:{args.port}"
    mcp = build_server(
        args.page_size, args.state_ttl, args.state_key, args.cache_ttl, args.cache_scope
    )
    if args.extra_tools == "renewal":
        from tests.peers._renewal_tools import register_fastmcp

        register_fastmcp(mcp)
    app = mcp.http_app(path=MCP_PATH, json_response=args.json_response or None)
    serve(PeerHarness(app, set_cookie=args.set_cookie), args.host, args.port)


if __name__ == "__main__":
    main()
