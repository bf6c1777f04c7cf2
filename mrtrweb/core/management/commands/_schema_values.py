"""Values for a JSON schema, the way a person clicking "accept" on defaults would give them:
the conformance client's tool arguments and form answers (its default, else the first
option, else a plausible typed value)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import mcp_types

from mrtrweb.mcp import MCPError

__all__ = ["answer", "form_content", "tool_arguments", "value_for"]


_FORMAT_EXAMPLES = {
    "email": "user@example.com",
    "uri": "https://example.com/",
    "date": "2026-01-01",
    "date-time": "2026-01-01T00:00:00Z",
}


def _first_option(options: Any) -> Any:
    """The first ``const`` of a ``oneOf``/``anyOf`` list of titled options."""
    if isinstance(options, list):
        for option in options:
            if isinstance(option, dict) and "const" in option:
                return option["const"]
    return None


def _number(schema: Mapping[str, Any], integer: bool) -> int | float:
    low, high = schema.get("minimum"), schema.get("maximum")
    value: int | float = low if isinstance(low, int | float) else 0
    if isinstance(high, int | float) and value > high:
        value = high
    return math.ceil(value) if integer else value


def _string(schema: Mapping[str, Any]) -> str:
    value = _FORMAT_EXAMPLES.get(str(schema.get("format")), "example")
    min_length = schema.get("minLength")
    if isinstance(min_length, int) and len(value) < min_length:
        value = value.ljust(min_length, "x")
    max_length = schema.get("maxLength")
    if isinstance(max_length, int):
        value = value[:max_length]
    return value


def value_for(schema: Any) -> Any:
    """A plausible value of ``schema``: its default, else the first option, else a typed value."""
    if not isinstance(schema, dict):
        return "example"
    if "default" in schema:
        return schema["default"]
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    option = _first_option(schema.get("oneOf")) or _first_option(schema.get("anyOf"))
    if option is not None:
        return option
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if kind == "boolean":
        return True
    if kind in ("integer", "number"):
        return _number(schema, integer=kind == "integer")
    if kind == "array":
        items = schema.get("items")
        first = None
        if isinstance(items, dict):
            enum = items.get("enum")
            first = (
                enum[0] if isinstance(enum, list) and enum else _first_option(items.get("anyOf"))
            )
        return [first] if first is not None else []
    if kind == "object":
        return tool_arguments(schema)
    if kind == "null":
        return None
    return _string(schema)


def _properties(schema: Any) -> dict[str, Any]:
    props = schema.get("properties") if isinstance(schema, dict) else None
    return props if isinstance(props, dict) else {}


def form_content(requested_schema: Mapping[str, Any]) -> dict[str, Any]:
    """Accepted form content: a value for every property of the (flat) requested schema."""
    return {name: value_for(prop) for name, prop in _properties(requested_schema).items()}


def tool_arguments(input_schema: Mapping[str, Any]) -> dict[str, Any]:
    """Arguments for a tool: a value for each required property, nothing for optional ones."""
    props = _properties(input_schema)
    required = input_schema.get("required")
    names = [n for n in required if isinstance(n, str)] if isinstance(required, list) else []
    return {name: value_for(props.get(name)) for name in names}


def answer(key: str, request: mcp_types.InputRequest) -> mcp_types.InputResponse:
    """Answer one input request the way a person clicking "accept" on defaults would."""
    if isinstance(request, mcp_types.ElicitRequest):
        params = request.params
        if isinstance(params, mcp_types.ElicitRequestFormParams):
            return mcp_types.ElicitResult(
                action="accept", content=form_content(params.requested_schema)
            )
        # URL mode: nobody is here to visit the page.
        return mcp_types.ElicitResult(action="decline")
    raise MCPError(f"input request {key!r}: cannot answer {request.method} headlessly")
