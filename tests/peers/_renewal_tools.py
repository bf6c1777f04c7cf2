"""Tools for the renewal policy's tests (``--extra-tools renewal`` on ``fastmcp_server`` and
``sdk_server``; off by default, so the peers' listings stay as other tests count them).

- ``review_order(order)``, hinted **read-only**: two rounds, ``reviewer`` {``name``} then
  ``verdict`` {``ok``: boolean}, whose message names the reviewer and the order's current
  price: ``"Does order {order} at {price} look right to you, {name}?"``; the result
  ``"order {order} reviewed by {name}: ok|not ok"``.
- ``set_price(order, price)``: changes that price (the server's data changing while a
  person waits, so the same question reads differently when the call is issued again).
- ``count_order(order)``: the same rounds as ``review_order`` but **without hints** (a tool
  that may act), for the policy's refusal to renew it.

The SDK variants use resolvers (keys ``<module>:ask_reviewer`` and ``<module>:ask_verdict``);
the fastmcp ones use the keys ``reviewer`` and ``verdict`` and keep the reviewer in the state.
"""

from __future__ import annotations

from typing import Annotated, Any

import mcp_types
from fastmcp import Context
from mcp.server.mcpserver.resolve import Elicit, Resolve
from pydantic import BaseModel

from tests.peers._common import form_request, input_required, load_state

# order -> price; shared by both peers' tools in one process.
PRICES: dict[str, str] = {}
DEFAULT_PRICE = "10 EUR"


def price_of(order: str) -> str:
    return PRICES.get(order, DEFAULT_PRICE)


def verdict_message(order: str, name: str) -> str:
    return f"Does order {order} at {price_of(order)} look right to you, {name}?"


def set_price(order: str, price: str) -> str:
    PRICES[order] = price
    return f"order {order} now costs {price}"


READ_ONLY = mcp_types.ToolAnnotations(read_only_hint=True)


# --------------------------------------------------------------------------- fastmcp


def register_fastmcp(mcp: Any) -> None:
    from tests.peers.fastmcp_server import answer, require_elicitation

    def review(ctx: Context, order: str) -> Any:
        state = load_state(ctx.request_state)
        if state.get("step") == "verdict":
            name = state["name"]
            reply = answer(ctx, "verdict")
            if reply is not None:
                ok = reply.action == "accept" and bool((reply.content or {}).get("ok"))
                return f"order {order} reviewed by {name}: {'ok' if ok else 'not ok'}"
            return ask_verdict(ctx, order, name)
        reply = answer(ctx, "reviewer") if state.get("step") == "reviewer" else None
        if reply is not None and reply.action == "accept":
            return ask_verdict(ctx, order, str((reply.content or {}).get("name", "")))
        require_elicitation(ctx)
        return input_required(
            {
                "reviewer": form_request(
                    f"Who reviews order {order}?",
                    {"name": {"type": "string", "title": "Name", "minLength": 1}},
                    ["name"],
                )
            },
            {"step": "reviewer"},
        )

    def ask_verdict(ctx: Context, order: str, name: str) -> Any:
        require_elicitation(ctx)
        return input_required(
            {
                "verdict": form_request(
                    verdict_message(order, name),
                    {"ok": {"type": "boolean", "title": "Looks right"}},
                    ["ok"],
                )
            },
            {"step": "verdict", "name": name},
        )

    @mcp.tool(description="Review an order: who reviews, then a verdict.", annotations=READ_ONLY)
    def review_order(ctx: Context, order: str):
        return review(ctx, order)

    @mcp.tool(description="Count an order after a review (no hints: it may act).")
    def count_order(ctx: Context, order: str):
        return review(ctx, order)

    mcp.tool(description="Change an order's price.")(set_price)


# --------------------------------------------------------------------------- official SDK
# Resolvers live at module level: the SDK reads their (string) annotations with this
# module's globals, and names their keys after it (tests.peers._renewal_tools:ask_reviewer).


class Reviewer(BaseModel):
    name: str


class Verdict(BaseModel):
    ok: bool


def ask_reviewer(order: str) -> Elicit[Reviewer]:
    return Elicit(f"Who reviews order {order}?", Reviewer)


def ask_verdict(
    order: str, reviewer: Annotated[Reviewer, Resolve(ask_reviewer)]
) -> Elicit[Verdict]:
    return Elicit(verdict_message(order, reviewer.name), Verdict)


def sdk_review_order(
    order: str,
    reviewer: Annotated[Reviewer, Resolve(ask_reviewer)],
    verdict: Annotated[Verdict, Resolve(ask_verdict)],
) -> str:
    return f"order {order} reviewed by {reviewer.name}: {'ok' if verdict.ok else 'not ok'}"


def sdk_count_order(
    order: str,
    reviewer: Annotated[Reviewer, Resolve(ask_reviewer)],
    verdict: Annotated[Verdict, Resolve(ask_verdict)],
) -> str:
    return sdk_review_order(order, reviewer, verdict)


def register_sdk(srv: Any) -> None:
    srv.tool(
        name="review_order",
        description="Review an order: who reviews, then a verdict.",
        annotations=READ_ONLY,
    )(sdk_review_order)
    srv.tool(
        name="count_order", description="Count an order after a review (no hints: it may act)."
    )(sdk_count_order)
    srv.tool(description="Change an order's price.")(set_price)
