"""HTTP header rules of Streamable HTTP 2026-07-28.

Header values that cannot travel as plain text are wrapped in the base64
sentinel; tool arguments annotated with ``x-mcp-header`` are mirrored into
``Mcp-Param-{Name}`` headers, and tools whose annotations break the rules must
be dropped from a listing.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator, Mapping
from typing import Any

__all__ = [
    "MCP_PARAM_PREFIX",
    "NAME_BEARING_PARAMS",
    "encode_header_value",
    "header_schema",
    "invalid_x_mcp_header",
    "param_headers",
    "x_mcp_header_map",
]

MCP_PARAM_PREFIX = "Mcp-Param-"
X_MCP_HEADER = "x-mcp-header"

# The param whose value is mirrored into Mcp-Name, per method.
NAME_BEARING_PARAMS: Mapping[str, str] = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
}

_SENTINEL = re.compile(r"=\?base64\?(?P<payload>.*)\?=", re.DOTALL)
# Printable ASCII (0x20-0x7E). RFC 9110 also allows tab, but a tab inside a
# header value is easily mangled by intermediaries, so it is wrapped too.
_PLAIN = re.compile(r"[\x20-\x7e]*")
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_ANNOTATABLE_TYPES = frozenset({"string", "integer", "boolean"})
_MAX_SAFE_INTEGER = 2**53 - 1

# JSON Schema 2020-12 applicators. Crossing any of them (rather than
# `properties`) leaves the statically reachable path, where an annotation is
# invalid. `$ref` is deliberately absent: schemas are never dereferenced.
_SUBSCHEMA_ONE = frozenset(
    {
        "items",
        "contains",
        "additionalProperties",
        "unevaluatedItems",
        "unevaluatedProperties",
        "propertyNames",
        "not",
        "if",
        "then",
        "else",
        "contentSchema",
    }
)
_SUBSCHEMA_LIST = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
_SUBSCHEMA_MAP = frozenset({"patternProperties", "dependentSchemas", "$defs", "definitions"})


def encode_header_value(value: str) -> str:
    """Return ``value`` as is when it is safe in a header, else its base64 sentinel form."""
    if _PLAIN.fullmatch(value) and value == value.strip() and not _SENTINEL.fullmatch(value):
        return value
    # A lone surrogate (legal in a server's JSON string) has no UTF-8 form; its bytes are sent
    # as Python writes them and the server decides, rather than this raising mid-request.
    raw = value.encode("utf-8", errors="surrogatepass")
    return "=?base64?" + base64.b64encode(raw).decode("ascii") + "?="


def _schema_positions(root: Any) -> Iterator[tuple[tuple[str, ...] | None, dict[str, Any]]]:
    """Yield ``(properties path or None, schema)`` for every schema position under ``root``."""
    stack: list[tuple[tuple[str, ...] | None, Any]] = [((), root)]
    while stack:
        path, node = stack.pop()
        if not isinstance(node, dict):
            continue
        yield path, node
        for keyword, value in node.items():
            if keyword == "properties" and isinstance(value, dict):
                for name, sub in value.items():
                    stack.append(((*path, name) if path is not None else None, sub))
            elif keyword in _SUBSCHEMA_ONE:
                stack.append((None, value))
            elif keyword in _SUBSCHEMA_LIST and isinstance(value, list):
                stack.extend((None, sub) for sub in value)
            elif keyword in _SUBSCHEMA_MAP and isinstance(value, dict):
                stack.extend((None, sub) for sub in value.values())


def invalid_x_mcp_header(input_schema: Any) -> str | None:
    """Why the ``x-mcp-header`` annotations of ``input_schema`` are invalid, or ``None``."""
    seen: dict[str, str] = {}
    for path, schema in _schema_positions(input_schema):
        if X_MCP_HEADER not in schema:
            continue
        if not path:
            return "x-mcp-header outside a chain of `properties` from the root"
        where = ".".join(path)
        token = schema[X_MCP_HEADER]
        if not isinstance(token, str) or not _TOKEN.fullmatch(token):
            return f"property {where!r}: x-mcp-header {token!r} is not an HTTP token"
        if schema.get("type") not in _ANNOTATABLE_TYPES:
            return (
                f"property {where!r}: x-mcp-header is allowed only on string, integer "
                f"or boolean properties, not {schema.get('type')!r}"
            )
        if token.lower() in seen:
            return f"x-mcp-header {token!r} on {where!r} repeats the one on {seen[token.lower()]!r}"
        seen[token.lower()] = where
    return None


def x_mcp_header_map(input_schema: Any) -> dict[tuple[str, ...], str]:
    """Property path to header name, for a schema :func:`invalid_x_mcp_header` accepts."""
    return {
        path: schema[X_MCP_HEADER]
        for path, schema in _schema_positions(input_schema)
        if path and isinstance(schema.get(X_MCP_HEADER), str)
    }


def header_schema(input_schema: Any) -> dict[str, Any] | None:
    """The least of ``input_schema`` that :func:`x_mcp_header_map` reads the same from: the
    chains of ``properties`` down to each annotated property (with its type and annotation).
    None when it has no annotation, or invalid ones (a tool a listing drops)."""
    if not isinstance(input_schema, dict) or invalid_x_mcp_header(input_schema) is not None:
        return None
    header_map = x_mcp_header_map(input_schema)
    if not header_map:
        return None
    kept: dict[str, Any] = {"type": "object"}
    for path in header_map:
        source: Any = input_schema
        node = kept
        for name in path:
            source = source["properties"][name]
            node = node.setdefault("properties", {}).setdefault(name, {})
        node["type"] = source.get("type")
        node[X_MCP_HEADER] = source[X_MCP_HEADER]
    return kept


def _render(value: Any) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        # Beyond ±(2^53-1) other implementations cannot represent the value exactly.
        return str(value) if abs(value) <= _MAX_SAFE_INTEGER else None
    if isinstance(value, str):
        return value
    return None


def param_headers(
    header_map: Mapping[tuple[str, ...], str], arguments: Mapping[str, Any]
) -> dict[str, str]:
    """The ``Mcp-Param-*`` headers mirroring ``arguments``; absent or null values send none."""
    headers: dict[str, str] = {}
    for path, token in header_map.items():
        node: Any = arguments
        for key in path:
            node = node.get(key) if isinstance(node, Mapping) else None
        rendered = _render(node) if node is not None else None
        if rendered is not None:
            headers[MCP_PARAM_PREFIX + token] = encode_header_value(rendered)
    return headers
