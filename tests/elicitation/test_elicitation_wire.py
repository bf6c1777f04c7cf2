"""`mrtrweb.elicitation.wire` says what `mcp_types` says: the same shapes, the same answers.

`mcp_types` exports the strict per-property models of a `requestedSchema` only from its private
per-version package, so the app keeps its own copy written against pydantic. This test (not
the app) reads that package to hold the copy to it: a field, alias or type that an upgrade of
`mcp_types` changes fails here, on the same definitions, valid and spoiled, validated strictly
as `elicitation.schema` validates them.
"""

from __future__ import annotations

from typing import Any

import mcp_types._v2026_07_28 as theirs
import pytest
from hypothesis import given, settings
from pydantic import BaseModel, ValidationError

from mrtrweb.elicitation import wire as ours
from tests.elicitation.strategies import property_definitions, schemas
from tests.support.examples import examples

NAMES = ours.__all__


def fields(model: type[BaseModel]) -> dict[str, bool]:
    """A model's wire keys (aliases where it has them), each with whether it is required."""
    return {(info.alias or name): info.is_required() for name, info in model.model_fields.items()}


@pytest.mark.parametrize("name", NAMES)
def test_each_shape_has_the_same_keys(name: str) -> None:
    assert fields(getattr(ours, name)) == fields(getattr(theirs, name))


def accepts(model: type[BaseModel], data: Any) -> bool:
    try:
        model.model_validate(data, strict=True)
    except ValidationError:
        return False
    return True


SPOILS: list[Any] = [None, "5", 5, 5.5, True, [], ["a", 1], {}, {"const": 1}, [{"const": "a"}]]
EXTRA_KEYS = ("default", "items", "oneOf", "enum", "enumNames", "format", "minimum")


def spoilings(definition: dict[str, Any]) -> list[dict[str, Any]]:
    """``definition`` itself, and each of its keys (and a few it may lack) set to each spoil."""
    spoiled = [definition]
    for key in sorted(set(definition) | set(EXTRA_KEYS)):
        spoiled += [{**definition, key: value} for value in SPOILS]
    return spoiled


@settings(max_examples=examples(150), deadline=None, database=None)
@given(property_definitions)
def test_each_shape_accepts_and_refuses_what_mcp_types_does(definition: dict[str, Any]) -> None:
    for data in spoilings(definition):
        for name in NAMES:
            if name != "RequestedSchema":
                model_ours, model_theirs = getattr(ours, name), getattr(theirs, name)
                assert accepts(model_ours, data) == accepts(model_theirs, data), (name, data)


@settings(max_examples=examples(100), deadline=None, database=None)
@given(schemas())
def test_a_requested_schema_is_read_alike(schema: dict[str, Any]) -> None:
    assert accepts(ours.RequestedSchema, schema) == accepts(theirs.RequestedSchema, schema)
