"""A tool's arguments with 100,000 choices or fields are edited as JSON, not rendered as fields.

The same limits as a round's form (mrtrweb/elicitation/schema.py): a server controls its
tools' schemas, and a start page that renders 100,000 options takes many seconds.
"""

from __future__ import annotations

import pytest

from mrtrweb.elicitation.schema import MAX_FIELDS, MAX_OPTIONS
from mrtrweb.start_pages.tools import NotFlat, flat_arguments


def test_an_enum_up_to_the_limit_is_a_field_and_beyond_it_json() -> None:
    def schema(count: int) -> dict[str, object]:
        return {"type": "object", "properties": {"pick": {"enum": list(range(count))}}}

    (spec,) = flat_arguments(schema(MAX_OPTIONS))
    assert len(spec.choices) == MAX_OPTIONS
    with pytest.raises(NotFlat, match="too many for a field"):
        flat_arguments(schema(100_000))


def test_more_properties_than_a_form_may_have_are_json() -> None:
    def schema(count: int) -> dict[str, object]:
        return {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(count)}}

    assert len(flat_arguments(schema(MAX_FIELDS))) == MAX_FIELDS
    with pytest.raises(NotFlat, match="too many for fields"):
        flat_arguments(schema(MAX_FIELDS + 1))
