"""A tool's arguments form, without a server: flat schemas are typed fields, others JSON."""

from __future__ import annotations

import pytest

from mrtrweb.starting.tools import ArgumentsForm, NotFlat, flat_arguments
from tests.calls.pages import arg


def test_flat_schemas_become_typed_fields_and_others_need_json():
    schema = {
        "type": "object",
        "properties": {
            "n": {"type": "integer", "minimum": 1},
            "x": {"type": "number"},
            "flag": {"type": "boolean"},
            "level": {"enum": ["low", "high", 3]},
            "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
        },
        "required": ["n"],
    }
    specs = flat_arguments(schema)
    form = ArgumentsForm(
        specs,
        data={
            arg("n"): "4",
            arg("x"): "2.0",
            arg("flag"): "false",
            arg("level"): "2",
            arg("note"): "",
        },
    )
    assert form.is_valid(), form.errors
    assert form.arguments() == {"n": 4, "x": 2, "flag": False, "level": 3}
    assert type(form.arguments()["x"]) is int
    assert not ArgumentsForm(specs, data={arg("n"): "0"}).is_valid()

    for nested in (
        {"type": "object", "properties": {"t": {"type": "object"}}},
        {"type": "object", "properties": {"t": {"type": "array", "items": {"type": "string"}}}},
        {
            "type": "object",
            "properties": {"t": {"anyOf": [{"type": "string"}, {"type": "integer"}]}},
        },
        {"type": "object", "properties": {"t": {"$ref": "#/$defs/T"}}},
    ):
        with pytest.raises(NotFlat):
            flat_arguments(nested)
