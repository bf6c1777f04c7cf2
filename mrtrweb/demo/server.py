"""mrtrweb's demo MCP server: tools that ask a person for input, the 2026-07-28 way.

Run it on loopback (``make run`` does this for you)::

    python -m mrtrweb.demo.server --port 8765      # MCP endpoint: http://127.0.0.1:8765/mcp

How a tool asks for input under MCP 2026-07-28
----------------------------------------------
A server no longer calls the client back in the middle of a request. A tool that needs an
answer *returns* an ``InputRequiredResult``: the questions (``inputRequests``, keyed by names
the server picks) and a ``requestState`` that carries whatever it has learnt so far. The
client shows the questions to a person, possibly hours later, and calls the same tool again
with the same arguments, the answers (``inputResponses``) and the state echoed back byte for
byte. The tool runs from the top each time and uses the state to know where it is.

(fastmcp's ``ctx.elicit()`` belongs to the older, connection-based protocol and raises on
2026-07-28 requests, so the tools below build the ``InputRequiredResult`` themselves.)

The state travels through the client, so it must be protected. fastmcp seals it with the SDK's
``RequestStateBoundary``: AES-GCM, bound to this tool, its arguments and this server, valid
for 10 minutes. Here it is plaintext JSON before sealing; the client only ever sees an opaque
token, and a tampered, replayed or expired one is refused before the tool runs. Set
``MRTRWEB_DEMO_STATE_KEY`` (32+ characters) to keep rounds valid across restarts; without it
each run seals with a fresh random key.

The tools
---------
- ``approve_deployment``: one form with many kinds of field (select, integer and number
  ranges, multi-select, titled options, text, yes/no).
- ``purchase``: asks twice, shipping then payment; the result uses both answers.
- ``verify_identity``: URL mode; sends the person to ``/verify`` on this server, and only
  finishes once they pressed "I'm verified" there.
- ``echo``: answers at once, to check the connection.

Every tool treats *decline* and *cancel* as ordinary answers and says what did not happen.
"""

from __future__ import annotations

import argparse
import os
import secrets
import sys
from typing import Annotated, Any, Literal

import mcp_types
from fastmcp import Context, FastMCP
from mcp.server.request_state import RequestStateSecurity
from pydantic import Field

from .asking import answer_to, ask, done, form, not_done, state_of
from .verification import VERIFY_PATH, VerificationDesk, verify_page

SERVER_NAME = "mrtrweb-demo"
SERVER_VERSION = "1.0.0"
MCP_PATH = "/mcp"
DEFAULT_PORT = 8765
STATE_KEY_ENV = "MRTRWEB_DEMO_STATE_KEY"
# How long a round may wait for its answer; also how long a /verify link stays valid.
STATE_TTL_SECONDS = 600.0
MIN_KEY_BYTES = 32

INSTRUCTIONS = (
    "A demonstration server for mrtrweb. approve_deployment asks for an approval form, "
    "purchase asks for shipping details and then a payment confirmation, verify_identity "
    "sends you to a page to confirm who you are, and echo answers at once."
)


# --------------------------------------------------------------------------- approve_deployment

SERVICES = ["web", "api", "worker", "billing"]
WINDOWS = {
    "now": "Right now",
    "tonight": "Tonight, 22:00-23:00 UTC",
    "weekend": "Saturday morning",
}
AUDIENCES = {
    "ops": "Operations on-call",
    "dev": "#dev channel",
    "support": "Customer support",
}

APPROVAL_FIELDS: dict[str, Any] = {
    "service": {
        "type": "string",
        "title": "Service",
        "description": "Which service gets the new version.",
        "enum": SERVICES,
    },
    "replicas": {
        "type": "integer",
        "title": "Replicas",
        "description": "How many instances to run (1 to 20).",
        "minimum": 1,
        "maximum": 20,
        "default": 3,
    },
    "canary_percent": {
        "type": "number",
        "title": "Canary traffic (%)",
        "description": "Share of traffic the new version receives first.",
        "minimum": 0,
        "maximum": 100,
        "default": 10,
    },
    "notify": {
        "type": "array",
        "title": "Notify",
        "items": {"anyOf": [{"const": k, "title": t} for k, t in AUDIENCES.items()]},
        "default": ["ops"],
    },
    "window": {
        "type": "string",
        "title": "Deployment window",
        "oneOf": [{"const": k, "title": t} for k, t in WINDOWS.items()],
        "default": "tonight",
    },
    "reason": {
        "type": "string",
        "title": "Reason",
        "description": "Why this release, in a sentence (shown in the change log).",
        "minLength": 10,
        "maxLength": 500,
    },
    "approve": {
        "type": "boolean",
        "title": "I approve this deployment",
        "default": False,
    },
}
APPROVAL_REQUIRED = ["service", "replicas", "window", "reason", "approve"]


def approval_problems(content: dict[str, Any]) -> list[str]:
    """What is wrong with an approval answer. Clients validate too, but a server never trusts."""
    problems = [f"{name} is missing" for name in APPROVAL_REQUIRED if name not in content]
    if problems:
        return problems
    replicas, canary = content["replicas"], content.get("canary_percent", 10)
    if content["service"] not in SERVICES:
        problems.append("service must be one of " + ", ".join(SERVICES))
    if type(replicas) is not int or not 1 <= replicas <= 20:
        problems.append("replicas must be a whole number from 1 to 20")
    if type(canary) not in (int, float) or not 0 <= canary <= 100:
        problems.append("canary traffic must be a number from 0 to 100")
    notify = content.get("notify", [])
    if not isinstance(notify, list) or not set(notify) <= AUDIENCES.keys():
        problems.append("notify must be a list of " + ", ".join(AUDIENCES))
    if content["window"] not in WINDOWS:
        problems.append("window must be one of " + ", ".join(WINDOWS))
    reason = content["reason"]
    if not isinstance(reason, str) or not 10 <= len(reason.strip()) <= 500:
        problems.append("reason must be 10 to 500 characters")
    if not isinstance(content["approve"], bool):
        problems.append("approve must be yes or no")
    return problems


def approval_question(version: str, problem: str = "") -> mcp_types.ElicitRequest:
    message = f"Approve deploying {version}?"
    if problem:
        message = f"{message} Please correct: {problem}."
    return form(message, APPROVAL_FIELDS, APPROVAL_REQUIRED)


# --------------------------------------------------------------------------- purchase

PRICES = {"Mechanical keyboard": 129.00, "USB-C cable": 12.50, "Monitor arm": 89.00}
EXPRESS_FEE = 15.00
COUPONS = {"DEMO10": 0.10}
CARDS = {"visa-4242": "Visa ending 4242", "mc-5555": "Mastercard ending 5555"}
COUNTRIES = ["Germany", "France", "Netherlands", "United Kingdom", "United States"]
CURRENCY = "EUR"

SHIPPING_FIELDS: dict[str, Any] = {
    "name": {"type": "string", "title": "Full name", "minLength": 1, "maxLength": 100},
    "address": {
        "type": "string",
        "title": "Street address",
        "description": "Street, number and city.",
        "minLength": 5,
        "maxLength": 200,
    },
    "country": {"type": "string", "title": "Country", "enum": COUNTRIES},
    "email": {
        "type": "string",
        "title": "Email for tracking",
        "format": "email",
    },
    "express": {
        "type": "boolean",
        "title": f"Express delivery (+{EXPRESS_FEE:.2f} {CURRENCY})",
        "default": False,
    },
}
SHIPPING_REQUIRED = ["name", "address", "country"]

PAYMENT_FIELDS: dict[str, Any] = {
    "card": {
        "type": "string",
        "title": "Pay with",
        "oneOf": [{"const": k, "title": t} for k, t in CARDS.items()],
        "default": "visa-4242",
    },
    "coupon": {
        "type": "string",
        "title": "Coupon code",
        "description": "Optional. Try DEMO10.",
        "maxLength": 20,
    },
    "confirm": {"type": "boolean", "title": "Confirm payment", "default": False},
}
PAYMENT_REQUIRED = ["card", "confirm"]


def shipping_problems(content: dict[str, Any]) -> list[str]:
    problems = [f"{name} is missing" for name in SHIPPING_REQUIRED if not content.get(name)]
    for name in ("name", "address", "email"):
        if name in content and not isinstance(content[name], str):
            problems.append(f"{name} must be text")
    if content.get("country") and content["country"] not in COUNTRIES:
        problems.append("we do not ship to " + str(content["country"]))
    if "express" in content and not isinstance(content["express"], bool):
        problems.append("express must be yes or no")
    return problems


def shipping_question(item: str, quantity: int, problem: str = "") -> mcp_types.ElicitRequest:
    message = f"Where should we ship {quantity} x {item}?"
    if problem:
        message = f"{message} Please correct: {problem}."
    return form(message, SHIPPING_FIELDS, SHIPPING_REQUIRED)


def subtotal(item: str, quantity: int, shipping: dict[str, Any]) -> float:
    return PRICES[item] * quantity + (EXPRESS_FEE if shipping.get("express") else 0.0)


def ship_to(shipping: dict[str, Any]) -> str:
    return f"{shipping['name']}, {shipping['address']}, {shipping['country']}"


def payment_question(
    item: str, quantity: int, shipping: dict[str, Any], problem: str = ""
) -> mcp_types.ElicitRequest:
    # The second question quotes the first answer: the state carried it here.
    how = "express" if shipping.get("express") else "standard"
    total = subtotal(item, quantity, shipping)
    message = (
        f"Pay {total:.2f} {CURRENCY} for {quantity} x {item}, {how} delivery to "
        f"{ship_to(shipping)}?"
    )
    if problem:
        message = f"{message} Please correct: {problem}."
    return form(message, PAYMENT_FIELDS, PAYMENT_REQUIRED)


# --------------------------------------------------------------------------- the server


def state_security(key: str | None) -> RequestStateSecurity:
    if not key:
        return RequestStateSecurity.ephemeral(ttl=STATE_TTL_SECONDS, audience=SERVER_NAME)
    if len(key.encode()) < MIN_KEY_BYTES:
        raise ValueError(
            f"{STATE_KEY_ENV} must be at least {MIN_KEY_BYTES} characters of secret randomness "
            '(python -c "import secrets; print(secrets.token_hex(32))")'
        )
    return RequestStateSecurity(keys=[key], ttl=STATE_TTL_SECONDS, audience=SERVER_NAME)


def build_server(base_url: str, state_key: str | None = None) -> FastMCP:
    """The demo server; ``base_url`` is where people reach it (for the /verify links)."""
    mcp = FastMCP(
        SERVER_NAME,
        instructions=INSTRUCTIONS,
        version=SERVER_VERSION,
        request_state_security=state_security(state_key),
    )
    desk = VerificationDesk(lifetime=STATE_TTL_SECONDS)
    mcp.custom_route(VERIFY_PATH, methods=["GET", "POST"], name="verify")(verify_page(desk))

    @mcp.tool(title="Echo", description="Answer with the text you send. Asks nothing.")
    def echo(text: str) -> str:
        return text

    @mcp.tool(
        title="Approve a deployment",
        description="Ask a release manager to approve deploying a version, in one form.",
    )
    def approve_deployment(ctx: Context, version: str = "v2.4.0"):
        reply = answer_to(ctx, "approval")
        # Only read an answer to a question this server asked: the sealed state proves it.
        if state_of(ctx).get("asked") != "approval" or reply is None:
            return ask(ctx, {"approval": approval_question(version)}, {"asked": "approval"})
        if reply.action != "accept":
            return not_done(reply.action, f"Deployment of {version}", version=version)
        content: dict[str, Any] = dict(reply.content or {})
        problems = approval_problems(content)
        if problems:
            # Ask again rather than fail: the person can fix the answer.
            question = approval_question(version, "; ".join(problems))
            return ask(ctx, {"approval": question}, {"asked": "approval"})
        details: dict[str, Any] = {
            "version": version,
            "service": content["service"],
            "replicas": content["replicas"],
            "canary_percent": content.get("canary_percent", 10),
            "window": content["window"],
            "notify": content.get("notify", []),
            "reason": content["reason"],
        }
        if not content["approve"]:
            return done(
                f"Deployment of {version} to {content['service']} was not approved.",
                status="rejected",
                **details,
            )
        notified = ", ".join(AUDIENCES[a] for a in details["notify"]) or "nobody"
        return done(
            f"Approved: {content['service']} {version} goes out {WINDOWS[content['window']]} "
            f"with {content['replicas']} replicas, {details['canary_percent']}% canary "
            f"traffic first. Notifying: {notified}. Reason: {content['reason']}",
            status="approved",
            **details,
        )

    @mcp.tool(
        title="Buy something",
        description="Order an item. Asks for shipping details, then for payment confirmation.",
    )
    def purchase(
        ctx: Context,
        item: Literal["Mechanical keyboard", "USB-C cable", "Monitor arm"] = "Mechanical keyboard",
        quantity: Annotated[int, Field(ge=1, le=10)] = 1,
    ):
        state = state_of(ctx)
        step = state.get("step")

        if step == "payment":
            shipping = state["shipping"]
            reply = answer_to(ctx, "payment")
            if reply is None:
                return ask(ctx, {"payment": payment_question(item, quantity, shipping)}, state)
            if reply.action != "accept":
                return not_done(reply.action, f"Purchase of {item}", step="payment")
            payment: dict[str, Any] = dict(reply.content or {})
            if payment.get("confirm") is not True:
                return done(
                    f"Payment not confirmed; {item} was not ordered and nothing was charged.",
                    status="unconfirmed",
                    shipping=shipping,
                )
            card = payment.get("card")
            if card not in CARDS:
                question = payment_question(item, quantity, shipping, "choose one of the cards")
                return ask(ctx, {"payment": question}, state)
            total = subtotal(item, quantity, shipping)
            coupon = str(payment.get("coupon") or "").strip().upper()
            note = ""
            if coupon in COUPONS:
                total *= 1 - COUPONS[coupon]
                note = f" Coupon {coupon} applied."
            elif coupon:
                note = f" Coupon {coupon} is not valid and was ignored."
                coupon = ""
            order = "DEMO-" + secrets.token_hex(3).upper()
            how = "express" if shipping.get("express") else "standard"
            return done(
                f"Order {order} placed: {quantity} x {item}, {total:.2f} {CURRENCY} paid with "
                f"{CARDS[card]}, {how} delivery to {ship_to(shipping)}.{note}",
                status="ordered",
                order=order,
                item=item,
                quantity=quantity,
                total=round(total, 2),
                currency=CURRENCY,
                shipping=shipping,
                payment={"card": card, "coupon": coupon or None},
            )

        reply = answer_to(ctx, "shipping") if step == "shipping" else None
        if reply is None:
            return ask(ctx, {"shipping": shipping_question(item, quantity)}, {"step": "shipping"})
        if reply.action != "accept":
            return not_done(reply.action, f"Purchase of {item}", step="shipping")
        shipping = dict(reply.content or {})
        problems = shipping_problems(shipping)
        if problems:
            question = shipping_question(item, quantity, "; ".join(problems))
            return ask(ctx, {"shipping": question}, {"step": "shipping"})
        shipping.setdefault("express", False)
        # The shipping answer rides along in the (sealed) state, so the server keeps nothing.
        return ask(
            ctx,
            {"payment": payment_question(item, quantity, shipping)},
            {"step": "payment", "shipping": shipping},
        )

    @mcp.tool(
        title="Verify your identity",
        description=(
            "Send you to a page on the demo server to confirm who you are (URL mode), then "
            "finish once you did."
        ),
    )
    def verify_identity(ctx: Context, purpose: str = "open the payroll report"):
        ref = state_of(ctx).get("ref")
        reply = answer_to(ctx, "verify")
        message = f"Confirm your identity to {purpose}: open the page and press I'm verified."

        if ref is not None and reply is not None:
            if reply.action != "accept":
                return not_done(reply.action, "Identity verification", purpose=purpose)
            # Used up on success: a replayed state cannot ride on an old confirmation.
            if desk.use(ref):
                return done(
                    f"Identity verified: you may now {purpose}.",
                    status="verified",
                    purpose=purpose,
                )
            # "I've finished" without pressing the button on the page: ask again.
            message = (
                f"The demo server has not seen your confirmation yet. Open the page, press "
                f"I'm verified, then finish. (To {purpose}.)"
            )
        if ref is None or desk.get(ref) is None:
            # First time, or the link expired (or this server restarted): a fresh reference.
            ref = desk.open(purpose)
        question = mcp_types.ElicitRequest(
            params=mcp_types.ElicitRequestURLParams(
                mode="url",
                message=message,
                url=f"{base_url}{VERIFY_PATH}?ref={ref}",
            )
        )
        return ask(ctx, {"verify": question}, {"ref": ref})

    return mcp


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="mrtrweb's demo MCP server (loopback only).")
    parser.add_argument(
        "--port", type=int, default=int(os.environ.get("DEMO_PORT") or DEFAULT_PORT)
    )
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on; keep it on loopback, the demo has no authentication",
    )
    parser.add_argument("--log-level", default="warning")
    args = parser.parse_args(argv)

    host_in_url = f"[{args.host}]" if ":" in args.host else args.host
    base_url = f"http://{host_in_url}:{args.port}"
    try:
        mcp = build_server(base_url, os.environ.get(STATE_KEY_ENV) or None)
    except ValueError as exc:
        parser.exit(2, f"error: {exc}\n")
    print(f"mrtrweb demo MCP server on {base_url}{MCP_PATH}", file=sys.stderr, flush=True)
    mcp.run(
        transport="http",
        host=args.host,
        port=args.port,
        path=MCP_PATH,
        show_banner=False,
        log_level=args.log_level,
    )


if __name__ == "__main__":
    main()
