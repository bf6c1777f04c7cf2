"""classify(): every shape of the vocabulary, and everything outside it refused whole."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from mrtrweb.elicitation import (
    EnumStyle,
    Kind,
    Option,
    UnsupportedSchema,
    build_form,
    classify,
)
from tests.elicitation.real_schemas import FASTMCP, PROTOCOL_EXAMPLES, SDK_BOOKING


def one(definition: dict[str, Any], *, required: bool = False) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"p": definition},
        **({"required": ["p"]} if required else {}),
    }


def test_sdk_booking_schema_is_classified_in_order_with_titles_and_required():
    spec = classify(SDK_BOOKING)
    assert [f.prop for f in spec] == list(SDK_BOOKING["properties"])
    assert spec.required == ("name", "email", "guests", "arrival")
    name = spec.field("name")
    assert (name.kind, name.label, name.min_length, name.max_length) == (Kind.STRING, "Name", 2, 40)
    assert name.description == "As on your passport"
    assert spec.field("guests").kind is Kind.INTEGER
    assert (spec.field("guests").minimum, spec.field("guests").maximum) == (1, 8)
    assert spec.field("budget").kind is Kind.NUMBER
    assert spec.field("breakfast").default is False
    assert spec.field("arrival").format == "date"
    assert spec.field("callback_at").format == "date-time"
    assert spec.field("website").format == "uri"
    room = spec.field("room")
    assert (room.kind, room.enum_style, room.default) == (
        Kind.SINGLE_SELECT,
        EnumStyle.UNTITLED,
        "double",
    )
    assert spec.field("extras").kind is Kind.MULTI_SELECT


@pytest.mark.parametrize(
    ("name", "kind", "style"),
    [
        ("str", Kind.STRING, None),
        ("int", Kind.INTEGER, None),
        ("float", Kind.NUMBER, None),
        ("bool", Kind.BOOLEAN, None),
        ("enum", Kind.SINGLE_SELECT, EnumStyle.UNTITLED),
        ("literal", Kind.SINGLE_SELECT, EnumStyle.UNTITLED),
        ("titled_single", Kind.SINGLE_SELECT, EnumStyle.TITLED),
        ("untitled_multi", Kind.MULTI_SELECT, EnumStyle.UNTITLED),
        ("titled_multi", Kind.MULTI_SELECT, EnumStyle.TITLED),
    ],
)
def test_fastmcp_value_wrapper_schemas(name, kind, style):
    schema, _ = FASTMCP[name]
    spec = classify(schema)
    assert [f.prop for f in spec] == ["value"]
    assert spec.field("value").kind is kind
    assert spec.field("value").enum_style is style
    assert spec.required == ("value",)


def test_all_five_enum_shapes_keep_values_and_titles_apart():
    schema = {
        "type": "object",
        "properties": {
            "untitled": {"type": "string", "enum": ["a", "b"]},
            "titled": {
                "type": "string",
                "oneOf": [{"const": "a", "title": "Alpha"}, {"const": "b", "title": "Beta"}],
            },
            "legacy": {"type": "string", "enum": ["a", "b"], "enumNames": ["Alpha", "Beta"]},
            "multi": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
            "titled_multi": {
                "type": "array",
                "items": {"anyOf": [{"const": "a", "title": "Alpha"}]},
                "minItems": 0,
                "maxItems": 1,
            },
        },
    }
    spec = classify(schema)
    assert spec.field("untitled").options == (Option("a"), Option("b"))
    assert [o.label for o in spec.field("untitled").options] == ["a", "b"]
    assert spec.field("titled").options == (Option("a", "Alpha"), Option("b", "Beta"))
    legacy = spec.field("legacy")
    assert legacy.options == (Option("a", "Alpha"), Option("b", "Beta"))
    assert legacy.enum_style is EnumStyle.LEGACY
    assert spec.field("multi").enum_style is EnumStyle.UNTITLED
    titled_multi = spec.field("titled_multi")
    assert titled_multi.options == (Option("a", "Alpha"),)
    assert (titled_multi.min_items, titled_multi.max_items) == (0, 1)


@pytest.mark.parametrize("name", sorted(PROTOCOL_EXAMPLES))
def test_protocol_examples_classify_and_build(name):
    schema = PROTOCOL_EXAMPLES[name]
    spec = classify(schema)
    assert len(spec) == 1
    assert build_form(schema, prefix="p").as_div()


def test_label_falls_back_to_property_name_and_blank_titles_are_ignored():
    spec = classify(
        {
            "type": "object",
            "properties": {
                "plain": {"type": "string"},
                "blank": {"type": "string", "title": "  "},
                "": {"type": "string"},
            },
        }
    )
    assert [f.label for f in spec] == ["plain", "blank", "Answer"]


def test_pydantic_model_extras_are_tolerated():
    # Top-level title/description from pydantic, annotations, an inert $defs.
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Model",
        "description": "doc",
        "additionalProperties": False,
        "$defs": {"Unused": {"type": "string"}},
        "type": "object",
        "properties": {
            "a": {"type": "string", "examples": ["x"], "$comment": "c", "deprecated": False},
            "b": {"type": "array", "items": {"type": "string", "enum": ["x"], "title": "Color"}},
        },
    }
    assert len(classify(schema)) == 2


def test_empty_properties_is_a_form_with_no_fields():
    assert len(classify({"type": "object", "properties": {}})) == 0


def test_null_title_and_null_default_mean_absent():
    spec = classify(one({"type": "string", "title": None, "default": None}))
    assert spec.field("p").title is None
    assert spec.field("p").default is None


UNSUPPORTED: list[tuple[str, Any]] = [
    ("not an object", ["type", "object"]),
    ("no type", {"properties": {}}),
    ("wrong top type", {"type": "array", "properties": {}}),
    ("no properties", {"type": "object"}),
    ("properties not object", {"type": "object", "properties": []}),
    ("top-level allOf", {"type": "object", "properties": {}, "allOf": []}),
    ("nested object", one({"type": "object", "properties": {"x": {"type": "string"}}})),
    (
        "array of objects",
        one({"type": "array", "items": {"type": "object", "properties": {}}}),
    ),
    ("array of strings without enum", one({"type": "array", "items": {"type": "string"}})),
    ("array without items", one({"type": "array"})),
    ("array items not object", one({"type": "array", "items": ["x"]})),
    ("pattern", one({"type": "string", "pattern": "^a"})),
    ("$ref", one({"$ref": "#/$defs/X"})),
    ("$ref next to type", one({"type": "string", "$ref": "#/$defs/X"})),
    ("unknown type", one({"type": "file"})),
    ("null type", one({"type": "null"})),
    ("type list", one({"type": ["string", "null"]})),
    ("missing type", one({"title": "x"})),
    ("anyOf nullable", one({"anyOf": [{"type": "string"}, {"type": "null"}]})),
    ("unknown format", one({"type": "string", "format": "uuid"})),
    ("format on number", one({"type": "number", "format": "date"})),
    ("enum with non-strings", one({"type": "string", "enum": ["a", 1]})),
    ("enum on integer", one({"type": "integer", "enum": [1, 2]})),
    ("empty enum", one({"type": "string", "enum": []})),
    ("duplicate enum", one({"type": "string", "enum": ["a", "a"]})),
    (
        "oneOf item without title",
        one({"type": "string", "oneOf": [{"const": "a"}]}),
    ),
    (
        "oneOf item without const",
        one({"type": "string", "oneOf": [{"title": "A"}]}),
    ),
    ("oneOf of types", one({"type": "string", "oneOf": [{"type": "string"}]})),
    (
        "oneOf item with extra keyword",
        one({"type": "string", "oneOf": [{"const": "a", "title": "A", "pattern": "x"}]}),
    ),
    ("oneOf const not string", one({"type": "string", "oneOf": [{"const": 1, "title": "A"}]})),
    (
        "anyOf item without title",
        one({"type": "array", "items": {"anyOf": [{"const": "a"}]}}),
    ),
    (
        "anyOf items of integers",
        one(
            {"type": "array", "items": {"type": "integer", "anyOf": [{"const": "a", "title": "A"}]}}
        ),
    ),
    ("enum and oneOf", one({"type": "string", "enum": ["a"], "oneOf": []})),
    ("enumNames length mismatch", one({"type": "string", "enum": ["a", "b"], "enumNames": ["A"]})),
    ("items.enum of numbers", one({"type": "array", "items": {"type": "number", "enum": [1]}})),
    ("required names unknown", {"type": "object", "properties": {}, "required": ["ghost"]}),
    ("required not a list", {"type": "object", "properties": {}, "required": "a"}),
    ("minimum as string", one({"type": "number", "minimum": "1"})),
    ("minimum as boolean", one({"type": "number", "minimum": True})),
    ("infinite maximum", one({"type": "number", "maximum": float("inf")})),
    ("NaN minimum", one({"type": "number", "minimum": float("nan")})),
    ("minimum above maximum", one({"type": "number", "minimum": 2, "maximum": 1})),
    ("no integer in range", one({"type": "integer", "minimum": 1.2, "maximum": 1.8})),
    ("exclusiveMinimum", one({"type": "number", "exclusiveMinimum": 0})),
    ("multipleOf", one({"type": "integer", "multipleOf": 2})),
    ("negative minLength", one({"type": "string", "minLength": -1})),
    ("float minLength", one({"type": "string", "minLength": 2.0})),
    ("minLength above maxLength", one({"type": "string", "minLength": 3, "maxLength": 2})),
    ("string const", one({"type": "string", "const": "x"})),
    ("boolean default as int", one({"type": "boolean", "default": 1})),
    ("string default as number", one({"type": "string", "default": 5})),
    ("number default as string", one({"type": "number", "default": "5"})),
    (
        "multi default not a list",
        one({"type": "array", "items": {"enum": ["a"], "type": "string"}, "default": "a"}),
    ),
    (
        "minItems above option count",
        one({"type": "array", "items": {"type": "string", "enum": ["a"]}, "minItems": 2}),
    ),
    (
        "minItems above maxItems",
        one(
            {
                "type": "array",
                "items": {"type": "string", "enum": ["a", "b"]},
                "minItems": 2,
                "maxItems": 1,
            }
        ),
    ),
    (
        "uniqueItems",
        one({"type": "array", "items": {"type": "string", "enum": ["a"]}, "uniqueItems": True}),
    ),
    ("property not an object", one("string")),
    ("unknown keyword", one({"type": "string", "x-widget": "color"})),
]


@pytest.mark.parametrize(("label", "schema"), UNSUPPORTED, ids=[u[0] for u in UNSUPPORTED])
def test_unsupported_schemas_are_refused_whole(label, schema):
    with pytest.raises(UnsupportedSchema) as info:
        classify(schema)
    assert info.value.reason
    # Never half-render: the same schema next to a fine property is still refused.
    if isinstance(schema, dict) and isinstance(schema.get("properties"), dict):
        mixed = copy.deepcopy(schema)
        mixed["properties"] = {"fine": {"type": "string"}, **mixed["properties"]}
        with pytest.raises(UnsupportedSchema):
            build_form(mixed, prefix="p")


def test_unsupported_names_the_property():
    with pytest.raises(UnsupportedSchema) as info:
        classify({"type": "object", "properties": {"ok": {"type": "string"}, "bad": one({})}})
    assert info.value.prop == "bad"
    assert "bad" in str(info.value)
