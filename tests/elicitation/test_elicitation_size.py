"""Forms a person can fill in: a server's 100,000 options or fields are refused, not rendered.

Rendering is about a millisecond an option, so the hostile peer's 100,000-option enum held
every view of its round for 13 s (tests/browser/hostile, ``huge-enum``).
"""

from __future__ import annotations

from typing import Any

import pytest

from mrtrweb.elicitation import UnsupportedSchema, classify
from mrtrweb.elicitation.schema import MAX_FIELDS, MAX_FORM_OPTIONS, MAX_OPTIONS


def options(count: int) -> list[str]:
    return [f"option {i}" for i in range(count)]


def single(count: int) -> dict[str, Any]:
    return {"type": "string", "enum": options(count)}


@pytest.mark.parametrize(
    "definition",
    [
        single(MAX_OPTIONS),
        {"type": "string", "oneOf": [{"const": o, "title": o} for o in options(MAX_OPTIONS)]},
        {"type": "array", "items": {"type": "string", "enum": options(MAX_OPTIONS)}},
    ],
)
def test_a_field_may_have_up_to_the_limit_of_options(definition: dict[str, Any]) -> None:
    spec = classify({"type": "object", "properties": {"p": definition}})
    assert len(spec.field("p").options) == MAX_OPTIONS


@pytest.mark.parametrize(
    "definition",
    [
        single(MAX_OPTIONS + 1),
        {"type": "string", "oneOf": [{"const": o, "title": o} for o in options(100_000)]},
        {"type": "array", "items": {"anyOf": [{"const": o, "title": o} for o in options(5000)]}},
        {"type": "string", "enum": options(2000), "enumNames": options(2000)},
    ],
)
def test_more_options_than_the_limit_make_the_form_unsupported(definition: dict[str, Any]) -> None:
    with pytest.raises(UnsupportedSchema, match=f"more than the {MAX_OPTIONS}") as raised:
        classify({"type": "object", "properties": {"p": definition}})
    assert raised.value.prop == "p"


def test_the_options_of_all_fields_together_are_limited_too() -> None:
    fields = MAX_FORM_OPTIONS // MAX_OPTIONS + 1
    schema = {"type": "object", "properties": {f"p{i}": single(MAX_OPTIONS) for i in range(fields)}}
    with pytest.raises(UnsupportedSchema, match=f"more than the {MAX_FORM_OPTIONS}"):
        classify(schema)


def test_a_form_has_at_most_the_limit_of_fields() -> None:
    def schema(count: int) -> dict[str, Any]:
        return {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(count)}}

    assert len(classify(schema(MAX_FIELDS))) == MAX_FIELDS
    with pytest.raises(UnsupportedSchema, match=f"more than the {MAX_FIELDS}"):
        classify(schema(MAX_FIELDS + 1))
