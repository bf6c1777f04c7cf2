"""Schemas as real servers produce them (protocol.md §6), rendered live by the libraries.

``sdk_*`` come from the official SDK's ``render_elicitation_schema`` (what ``MCPServer``
sends: pydantic titles, ``T | None`` flattened); ``fastmcp_*`` from fastmcp's
``parse_elicit_response_type`` (scalar ``value`` wrapper, ``oneOf`` for titled single
select, ``items.anyOf`` for multi-select, plain ``enum`` for Python enums). Each comes with
the server-side validator that will judge our content, so tests can check content the way
the server will.
"""

from __future__ import annotations

import datetime as dt
from enum import Enum
from typing import Any, Literal

from fastmcp.server.elicitation import handle_elicit_accept, parse_elicit_response_type
from mcp.server.elicitation import render_elicitation_schema
from mcp_types import ElicitResult
from pydantic import BaseModel, Field


class Booking(BaseModel):
    """What the SDK's MCPServer asks for in a typical booking tool."""

    name: str = Field(min_length=2, max_length=40, description="As on your passport")
    email: str = Field(json_schema_extra={"format": "email"})
    guests: int = Field(ge=1, le=8, description="Adults and children")
    budget: float | None = Field(default=None, ge=0)
    breakfast: bool = False
    arrival: dt.date
    callback_at: dt.datetime | None = None
    room: Literal["single", "double", "suite"] = "double"
    extras: list[Literal["parking", "late-checkout", "crib"]] = []
    website: str | None = Field(default=None, json_schema_extra={"format": "uri"})


class AskName(BaseModel):
    name: str


class Color(Enum):
    RED = "red"
    GREEN = "green"
    BLUE = "blue"


SDK_BOOKING: dict[str, Any] = render_elicitation_schema(Booking)
SDK_ASK_NAME: dict[str, Any] = render_elicitation_schema(AskName)

_FASTMCP_TYPES: dict[str, Any] = {
    "str": str,
    "int": int,
    "float": float,
    "bool": bool,
    "enum": Color,
    "literal": Literal["low", "medium", "high"],
    "titled_single": {"lo": {"title": "Low"}, "hi": {"title": "High"}},
    "untitled_multi": [["x", "y", "z"]],
    "titled_multi": [{"lo": {"title": "Low"}, "hi": {"title": "High"}}],
}
FASTMCP: dict[str, tuple[dict[str, Any], Any]] = {}
for _name, _type in _FASTMCP_TYPES.items():
    _config = parse_elicit_response_type(_type)
    FASTMCP[_name] = (_config.schema, _config)


def sdk_accepts(model: type[BaseModel], content: dict[str, Any]) -> None:
    """Raise unless the SDK server would accept ``content`` (it model_validates it)."""
    ElicitResult(action="accept", content=content)
    model.model_validate(content)


def fastmcp_accepts(config: Any, content: dict[str, Any]) -> Any:
    """The value fastmcp's server hands the tool for ``content`` (raises if it refuses)."""
    return handle_elicit_accept(config, content).data


# Verbatim from protocol.md §6 and the spec's vocabulary table.
PROTOCOL_EXAMPLES: dict[str, dict[str, Any]] = {
    "sdk_name": {
        "type": "object",
        "properties": {"name": {"title": "Name", "type": "string"}},
        "required": ["name"],
    },
    "fastmcp_value": {
        "type": "object",
        "properties": {"value": {"title": "Value", "type": "integer"}},
        "required": ["value"],
    },
    "one_of": {
        "type": "object",
        "properties": {
            "value": {
                "type": "string",
                "oneOf": [{"const": "lo", "title": "Low"}, {"const": "hi", "title": "High"}],
            }
        },
        "required": ["value"],
    },
    "items_any_of": {
        "type": "object",
        "properties": {
            "value": {
                "type": "array",
                "items": {
                    "anyOf": [{"const": "lo", "title": "Low"}, {"const": "hi", "title": "High"}]
                },
                "minItems": 1,
                "maxItems": 2,
            }
        },
        "required": ["value"],
    },
    "legacy_enum_names": {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "size": {
                "type": "string",
                "title": "Size",
                "enum": ["s", "m", "l"],
                "enumNames": ["Small", "Medium", "Large"],
                "default": "m",
            }
        },
    },
}
