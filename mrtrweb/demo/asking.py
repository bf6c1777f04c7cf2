"""How the demo's tools ask: a form question, the ``InputRequiredResult`` that stops a tool
until the person answers, the state and answers it comes back with, and the results that
say what was (or, after a decline or cancel, was not) done."""

from __future__ import annotations

import json
from typing import Any

import mcp_types
from fastmcp import Context
from fastmcp.tools import ToolResult
from mcp.shared.exceptions import MCPError


def form(message: str, properties: dict[str, Any], required: list[str]) -> mcp_types.ElicitRequest:
    """One form question. The schema is the flat kind every client can render."""
    schema = {"type": "object", "properties": properties, "required": required}
    return mcp_types.ElicitRequest(
        params=mcp_types.ElicitRequestFormParams(message=message, requested_schema=schema)
    )


def ask(
    ctx: Context, questions: dict[str, mcp_types.ElicitRequest], state: dict[str, Any]
) -> mcp_types.InputRequiredResult:
    """Stop here and ask; the client comes back with the answers and this state."""
    for question in questions.values():
        require_elicitation(ctx, question.params.mode or "form")
    return mcp_types.InputRequiredResult(
        input_requests=questions, request_state=json.dumps(state, sort_keys=True)
    )


def state_of(ctx: Context) -> dict[str, Any]:
    # Already verified and unsealed by the boundary: if it is here, this server wrote it.
    if not ctx.request_state:
        return {}
    state = json.loads(ctx.request_state)
    return state if isinstance(state, dict) else {}


def answer_to(ctx: Context, key: str) -> mcp_types.ElicitResult | None:
    value = (ctx.input_responses or {}).get(key)
    return value if isinstance(value, mcp_types.ElicitResult) else None


def require_elicitation(ctx: Context, mode: str) -> None:
    """Refuse politely when the client cannot show this kind of question.

    A server must not send an input request the client did not declare. The error
    (-32021) names what is missing, so the client can tell its user.
    """
    declared = ctx.session.client_capabilities
    elicitation = getattr(declared, "elicitation", None)
    if elicitation is None:
        supported = False
    elif mode == "url":
        supported = elicitation.url is not None
    else:
        # A bare `elicitation: {}` means forms only.
        supported = elicitation.form is not None or elicitation.url is None
    if not supported:
        raise MCPError(
            code=-32021,
            message=f"This tool needs a client that supports {mode}-mode elicitation",
            data={"requiredCapabilities": {"elicitation": {mode: {}}}},
        )


def done(text: str, **structured: Any) -> ToolResult:
    return ToolResult(content=text, structured_content=structured)


def not_done(action: str, what: str, step: str = "", **structured: Any) -> ToolResult:
    """The answer to decline or cancel: a normal result (not an error) saying nothing happened."""
    verb = "declined" if action == "decline" else "cancelled"
    where = f" at {step}" if step else ""
    if step:
        structured["step"] = step
    return done(f"{what} {verb}{where}; nothing was done.", status=verb, **structured)
