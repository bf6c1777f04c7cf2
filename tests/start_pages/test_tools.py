"""A tool's arguments form, without a server: flat schemas are typed fields, others JSON."""

from __future__ import annotations

import pytest

from mrtrweb.start_pages.tools import ArgumentsForm, NotFlat, flat_arguments
from tests.calls.pages.client import arg


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


def test_fields_are_labelled_by_title_or_readable_name_with_limits_before_submitting() -> None:
    schema = {
        "type": "object",
        "properties": {
            "max_retries": {"type": "integer", "minimum": 0, "maximum": 5},
            "serviceName": {"type": "string", "title": "Service", "minLength": 2},
            "note": {"type": "string", "maxLength": 40, "description": "<i>free</i>"},
        },
        "required": ["serviceName"],
    }
    html = str(ArgumentsForm(flat_arguments(schema)))
    assert ">Max retries</label>" in html and ">Service</label>" in html
    assert ":</label>" not in html
    # The raw key only as a hint; the limits in words and as attributes.
    assert "<code>max_retries</code>" in html and "<code>serviceName</code>" in html
    assert "A whole number from 0 to 5." in html
    assert 'min="0"' in html and 'max="5"' in html and 'step="1"' in html
    assert "At least 2 characters." in html and 'minlength="2"' in html and "required" in html
    assert "At most 40 characters." in html and 'maxlength="40"' in html
    assert "&lt;i&gt;free&lt;/i&gt;" in html and "<i>free</i>" not in html
