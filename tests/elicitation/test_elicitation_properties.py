"""Property-based tests over random valid flat schemas and random posts.

- building, validating and rendering never crash;
- whenever the form is valid its content validates against the schema (checked
  independently, see ``support.content_problems``), carries every required property, and
  leaves out only optional ones;
- answers that meet the schema are always accepted and come out exactly;
- saved content pre-fills a form that posts the same content back;
- anything that is not a valid schema is refused with ``UnsupportedSchema`` and nothing else.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mrtrweb.elicitation import (
    UnsupportedSchema,
    build_form,
    classify,
    content_from,
    initial_from_content,
    prefix_for_key,
)
from tests.elicitation.strategies import any_text, random_posts, schemas, valid_answers
from tests.elicitation.support import content_problems, post, untouched_post
from tests.support.examples import examples

PREFIX = prefix_for_key("__main__:ask")
UTC = dt.UTC

common = settings(
    deadline=None,
    max_examples=examples(150),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def same_content(schema: dict[str, Any], a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Equal, with date-times compared as instants (an offset may be re-expressed)."""
    if a.keys() != b.keys():
        return False
    for prop, value in a.items():
        other = b[prop]
        if schema["properties"][prop].get("format") == "date-time":
            if dt.datetime.fromisoformat(value) != dt.datetime.fromisoformat(other):
                return False
            continue
        numbers = all(
            isinstance(v, int | float) and not isinstance(v, bool) for v in (value, other)
        )
        if value != other or (type(value) is not type(other) and not numbers):
            return False
    return True


@common
@given(st.data())
def test_random_posts_never_crash_and_valid_forms_give_valid_content(data):
    schema = data.draw(schemas())
    spec = classify(schema)
    form = build_form(schema, prefix=PREFIX, data=data.draw(random_posts(schema, PREFIX)), tz=UTC)
    str(form)  # renders, errors and all
    if not form.is_valid():
        with pytest.raises(ValueError):
            content_from(form)
        return
    content = content_from(form)
    assert content_problems(schema, content) == []
    required = set(schema.get("required", []))
    assert required <= content.keys()
    assert content.keys() <= schema["properties"].keys()
    for field_spec in spec:
        if field_spec.prop not in content:
            assert not field_spec.required
    json.dumps(content, allow_nan=False)  # sendable as JSON as it is

    # Saved content pre-fills a form which, untouched, posts the same content back.
    initial = initial_from_content(schema, content)
    again = build_form(
        schema,
        prefix=PREFIX,
        data=untouched_post(build_form(schema, prefix=PREFIX, initial=initial, tz=UTC)),
        tz=UTC,
    )
    assert again.is_valid(), again.errors
    assert same_content(schema, content_from(again), content)


@common
@given(st.data())
def test_answers_that_meet_the_schema_are_accepted_exactly(data):
    schema = data.draw(schemas())
    answers, expected = data.draw(valid_answers(schema))
    form = build_form(schema, prefix=PREFIX, data=post(PREFIX, answers), tz=UTC)
    assert form.is_valid(), (answers, form.errors)
    content = content_from(form)
    assert same_content(schema, content, expected), (content, expected)
    assert content_problems(schema, content) == []


@common
@given(schemas())
def test_unbound_forms_render_with_defaults_and_untouched_posts_are_consistent(schema):
    form = build_form(schema, prefix=PREFIX, tz=UTC)
    str(form)
    # Posting the page as pre-filled is either valid content or refused; never a crash,
    # and never content that breaks the schema.
    again = build_form(schema, prefix=PREFIX, data=untouched_post(form), tz=UTC)
    if again.is_valid():
        assert content_problems(schema, content_from(again)) == []


# -- outside the vocabulary ----------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | any_text,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "type",
                    "enum",
                    "oneOf",
                    "anyOf",
                    "items",
                    "const",
                    "title",
                    "default",
                    "minimum",
                    "maximum",
                    "minLength",
                    "maxLength",
                    "format",
                    "enumNames",
                    "minItems",
                    "maxItems",
                    "properties",
                    "required",
                    "$ref",
                    "pattern",
                ]
            )
            | any_text,
            children,
            max_size=5,
        )
    ),
    max_leaves=20,
)
types = st.sampled_from(["string", "number", "integer", "boolean", "array", "object", "null"])


@common
@given(
    st.dictionaries(
        any_text,
        json_values
        | st.builds(
            lambda t, d: {"type": t, **d}, types, st.dictionaries(any_text, json_values, max_size=3)
        ),
        max_size=4,
    ),
    st.none() | st.lists(any_text, max_size=3),
)
def test_junk_is_refused_with_unsupported_schema_or_handled(properties, required):
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required is not None:
        schema["required"] = required
    try:
        spec = classify(schema)
    except UnsupportedSchema:
        return
    form = build_form(spec, prefix=PREFIX, tz=UTC)
    str(form)


@common
@given(json_values)
def test_junk_top_level_is_refused_with_unsupported_schema(value):
    with contextlib.suppress(UnsupportedSchema):
        classify(value)


FORBIDDEN = {
    "pattern": "^x",
    "$ref": "#/$defs/X",
    "allOf": [],
    "not": {},
    "multipleOf": 2,
    "exclusiveMaximum": 3,
    "const": "x",
    "if": {},
    "contentEncoding": "base64",
    "uniqueItems": True,
}


@common
@given(st.data())
def test_one_forbidden_keyword_anywhere_refuses_the_whole_schema(data):
    schema = data.draw(schemas().filter(lambda s: s["properties"]))
    prop = data.draw(st.sampled_from(sorted(schema["properties"])))
    keyword = data.draw(st.sampled_from(sorted(FORBIDDEN)))
    schema["properties"][prop] = {**schema["properties"][prop], keyword: FORBIDDEN[keyword]}
    with pytest.raises(UnsupportedSchema):
        build_form(schema, prefix=PREFIX)
