"""The header codec and the x-mcp-header rules, checked against the spec's examples."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mrtrweb.mcp.headers import (
    encode_header_value,
    invalid_x_mcp_header,
    param_headers,
    x_mcp_header_map,
)
from tests.support.headers import decode_header_value


def test_spec_examples_are_encoded_as_the_spec_shows() -> None:
    assert encode_header_value("Hello, 世界") == "=?base64?SGVsbG8sIOS4lueVjA==?="
    assert encode_header_value(" padded ") == "=?base64?IHBhZGRlZCA=?="
    assert encode_header_value("plain-value 1") == "plain-value 1"


def test_values_that_look_like_the_sentinel_or_carry_controls_are_wrapped() -> None:
    assert encode_header_value("=?base64?abc?=").startswith("=?base64?")
    assert decode_header_value(encode_header_value("=?base64?abc?=")) == "=?base64?abc?="
    assert encode_header_value("a\tb").startswith("=?base64?")
    assert encode_header_value("line\r\nbreak").startswith("=?base64?")


@given(st.text())
def test_every_string_survives_the_round_trip_and_is_header_safe(value: str) -> None:
    encoded = encode_header_value(value)
    assert decode_header_value(encoded) == value
    assert all(0x20 <= ord(c) <= 0x7E for c in encoded)
    assert encoded == encoded.strip()


def _schema(**props: dict) -> dict:
    return {"type": "object", "properties": props}


def test_valid_annotations_map_to_headers() -> None:
    schema = _schema(
        region={"type": "string", "x-mcp-header": "Region"},
        priority={"type": "integer", "x-mcp-header": "Priority"},
        dry_run={"type": "boolean", "x-mcp-header": "Dry-Run"},
        note={"type": "string"},
    )
    assert invalid_x_mcp_header(schema) is None
    header_map = x_mcp_header_map(schema)
    headers = param_headers(
        header_map, {"region": "eu-west", "priority": 3, "dry_run": False, "note": "x"}
    )
    assert headers == {
        "Mcp-Param-Region": "eu-west",
        "Mcp-Param-Priority": "3",
        "Mcp-Param-Dry-Run": "false",
    }


def test_absent_and_null_values_send_no_header_and_unsafe_ones_are_wrapped() -> None:
    header_map = x_mcp_header_map(_schema(region={"type": "string", "x-mcp-header": "Region"}))
    assert param_headers(header_map, {}) == {}
    assert param_headers(header_map, {"region": None}) == {}
    assert param_headers(header_map, {"region": "Zürich"}) == {
        "Mcp-Param-Region": encode_header_value("Zürich")
    }


def test_integers_beyond_the_safe_range_are_not_mirrored() -> None:
    header_map = x_mcp_header_map(_schema(n={"type": "integer", "x-mcp-header": "N"}))
    assert param_headers(header_map, {"n": 2**53 - 1}) == {"Mcp-Param-N": str(2**53 - 1)}
    assert param_headers(header_map, {"n": 2**53}) == {}


def test_invalid_annotations_are_reported() -> None:
    cases = {
        "number": _schema(x={"type": "number", "x-mcp-header": "X"}),
        "not a token": _schema(x={"type": "string", "x-mcp-header": "Bad Header"}),
        "empty": _schema(x={"type": "string", "x-mcp-header": ""}),
        "duplicate": _schema(
            a={"type": "string", "x-mcp-header": "Dup"},
            b={"type": "string", "x-mcp-header": "dup"},
        ),
        "under items": _schema(
            xs={"type": "array", "items": {"type": "string", "x-mcp-header": "X"}}
        ),
        "under anyOf": _schema(x={"anyOf": [{"type": "string", "x-mcp-header": "X"}]}),
        "at the root": {"type": "object", "x-mcp-header": "Root"},
        "under $defs": {
            "type": "object",
            "$defs": {"d": {"type": "string", "x-mcp-header": "X"}},
        },
    }
    for label, schema in cases.items():
        assert invalid_x_mcp_header(schema) is not None, label


def test_nested_properties_chain_is_allowed_and_mirrored() -> None:
    schema = _schema(
        target={
            "type": "object",
            "properties": {"env": {"type": "string", "x-mcp-header": "Env"}},
        }
    )
    assert invalid_x_mcp_header(schema) is None
    assert param_headers(x_mcp_header_map(schema), {"target": {"env": "prod"}}) == {
        "Mcp-Param-Env": "prod"
    }


def test_refs_are_never_followed() -> None:
    schema = {
        "type": "object",
        "properties": {"x": {"$ref": "https://example.invalid/schema.json"}},
    }
    assert invalid_x_mcp_header(schema) is None
    assert x_mcp_header_map(schema) == {}
