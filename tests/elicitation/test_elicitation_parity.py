"""The form and the JSON API cannot disagree: the same value is accepted (with the same content)
or refused (with the same message) by a form posted as a browser posts it and by
``clean_content`` given it as JSON.

The table pins one value of each kind of the vocabulary and each constraint; the property
tries random schemas and values. Where they may differ, by design:

- JSON can leave a property out: a boolean left out is no answer (refused when required), and
  so is a required multi-select, while a browser cannot send "no answer" for a checkbox
  (unticked is ``false``, or ``[]``);
- a form reads a typed date and time leniently (no seconds, no offset: the person's zone),
  while JSON must send RFC 3339; every date-time the API accepts, the form accepts the same.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mrtrweb.elicitation import (
    FieldSpec,
    InvalidContent,
    Kind,
    build_form,
    classify,
    clean_content,
    content_from,
    prop_for_field_name,
)
from tests.elicitation.strategies import any_text, format_values, schemas, some_numbers
from tests.elicitation.support import post
from tests.support.examples import examples

PREFIX = "p"
UTC = dt.UTC


class Unpostable(Exception):
    """A value no browser could post for its field (a wrong JSON type, an unknown option)."""


def browser_value(field: FieldSpec, value: Any) -> Any:
    """What a browser posts for the JSON ``value`` (None: nothing sent)."""
    if value is None:
        return None
    if field.kind is Kind.BOOLEAN:
        if not isinstance(value, bool):
            raise Unpostable
        return "on" if value else None
    if field.kind in (Kind.NUMBER, Kind.INTEGER):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise Unpostable
        return repr(value)
    if field.kind is Kind.STRING:
        if not isinstance(value, str):
            raise Unpostable
        return value
    values = field.option_values()
    if field.kind is Kind.SINGLE_SELECT:
        if value not in values:
            raise Unpostable
        return str(values.index(value))
    if not isinstance(value, list) or any(item not in values for item in value):
        raise Unpostable
    return [str(values.index(item)) for item in value]


Outcome = tuple[str, Any]  # ("accepted", content) or ("refused", {prop: [messages]})


def by_form(schema: dict[str, Any], content: dict[str, Any]) -> Outcome:
    spec = classify(schema)
    answers = {field.prop: browser_value(field, content.get(field.prop)) for field in spec}
    form = build_form(spec, prefix=PREFIX, data=post(PREFIX, answers), tz=UTC)
    if form.is_valid():
        return "accepted", content_from(form)
    return "refused", {
        prop_for_field_name(name): [str(m) for m in messages]
        for name, messages in form.errors.items()
    }


def by_api(schema: dict[str, Any], content: dict[str, Any]) -> Outcome:
    try:
        return "accepted", clean_content(classify(schema), content)
    except InvalidContent as exc:
        refused: dict[str, list[str]] = {}
        for problem in exc.problems:
            refused.setdefault(problem.prop, []).append(problem.message)
        return "refused", refused


def one(definition: dict[str, Any], *, required: bool = False) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"p": definition},
        **({"required": ["p"]} if required else {}),
    }


TITLED = {"type": "string", "oneOf": [{"const": c, "title": c.upper()} for c in ("a", "b", "")]}
MULTI = {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}}
ACCEPT, REFUSE = "accepted", "refused"
SAME, OMITTED = object(), object()  # the content sent: the value as given; nothing for the key

CASES: list[tuple[dict[str, Any], bool, Any, str, Any]] = [
    # (definition, required, JSON value, outcome, the value sent or a part of the message)
    ({"type": "string"}, False, "  hi  ", ACCEPT, "hi"),
    ({"type": "string"}, False, "   ", ACCEPT, OMITTED),
    ({"type": "string"}, True, "   ", REFUSE, "This field is required."),
    ({"type": "string"}, True, None, REFUSE, "This field is required."),
    ({"type": "string"}, False, "a\x00b", REFUSE, "Null characters are not allowed."),
    ({"type": "string", "minLength": 3}, False, "  ab  ", REFUSE, "Enter at least 3"),
    ({"type": "string", "maxLength": 2}, False, "abc", REFUSE, "Enter at most 2"),
    ({"type": "string", "format": "email"}, False, " ann@example.com ", ACCEPT, "ann@example.com"),
    ({"type": "string", "format": "email"}, False, "ann", REFUSE, "email"),
    ({"type": "string", "format": "uri"}, False, "https://example.com/x", ACCEPT, SAME),
    ({"type": "string", "format": "uri"}, False, "example.com", REFUSE, "scheme"),
    ({"type": "string", "format": "date"}, False, "2026-02-28", ACCEPT, SAME),
    ({"type": "string", "format": "date"}, False, "2026-02-30", REFUSE, "valid date"),
    (
        {"type": "string", "format": "date-time"},
        False,
        "2026-08-01T09:30:00Z",
        ACCEPT,
        "2026-08-01T09:30:00+00:00",
    ),
    (
        {"type": "string", "format": "date-time"},
        False,
        "2026-08-01T09:30:00.75+02:00",
        ACCEPT,
        "2026-08-01T09:30:00+02:00",
    ),
    ({"type": "integer"}, False, 3, ACCEPT, SAME),
    ({"type": "integer"}, False, 3.0, ACCEPT, 3),
    ({"type": "integer"}, False, 2.5, REFUSE, "Enter a whole number."),
    (
        {"type": "integer", "minimum": 1, "maximum": 10},
        False,
        11,
        REFUSE,
        "less than or equal to 10",
    ),
    ({"type": "integer", "minimum": 1}, False, 0, REFUSE, "greater than or equal to 1"),
    ({"type": "number"}, False, 2.0, ACCEPT, 2),
    ({"type": "number"}, False, 0.1, ACCEPT, SAME),
    ({"type": "number"}, False, 1e300, REFUSE, "Enter a smaller number."),
    ({"type": "number"}, False, 2**60, ACCEPT, float(2**60)),
    ({"type": "integer"}, False, 10**350, REFUSE, "Enter a smaller number."),
    ({"type": "integer"}, False, 10**500, REFUSE, "Enter a shorter number."),
    ({"type": "number", "maximum": 1.5}, False, 1.6, REFUSE, "less than or equal to 1.5"),
    ({"type": "boolean"}, False, True, ACCEPT, SAME),
    ({"type": "boolean"}, True, False, ACCEPT, SAME),
    ({"type": "string", "enum": ["x", "y"]}, False, "y", ACCEPT, SAME),
    (TITLED, True, "", ACCEPT, SAME),  # an option's value may be "": it is still an answer
    (TITLED, False, "b", ACCEPT, SAME),
    (MULTI, False, ["c", "a"], ACCEPT, ["a", "c"]),  # in option order
    (MULTI, False, ["b", "b"], ACCEPT, ["b"]),  # each once
    (MULTI, False, [], ACCEPT, OMITTED),  # nothing ticked on an optional one: no answer
    (MULTI, True, [], ACCEPT, []),
    ({**MULTI, "minItems": 2}, True, ["a"], REFUSE, "Select at least 2."),
    ({**MULTI, "maxItems": 1}, False, ["a", "b"], REFUSE, "Select at most 1."),
]


@pytest.mark.parametrize(("definition", "required", "value", "outcome", "expected"), CASES)
def test_form_and_api_agree(
    definition: dict[str, Any], required: bool, value: Any, outcome: str, expected: Any
) -> None:
    schema = one(definition, required=required)
    content = {} if value is None else {"p": value}
    api, form = by_api(schema, content), by_form(schema, content)
    assert api == form
    assert api[0] == outcome, api
    if expected is OMITTED:
        assert api[1] == {}
    elif outcome == ACCEPT:
        sent = value if expected is SAME else expected
        assert api[1] == {"p": sent}
        assert type(api[1]["p"]) is type(sent)
    else:
        assert expected in api[1]["p"][0]


def test_the_api_alone_tells_a_missing_checkbox_from_an_unticked_one() -> None:
    schema = {
        "type": "object",
        "properties": {"ok": {"type": "boolean"}, "tags": MULTI},
        "required": ["ok", "tags"],
    }
    assert by_api(schema, {}) == (
        REFUSE,
        {"ok": ["This field is required."], "tags": ["This field is required."]},
    )
    assert by_form(schema, {}) == (ACCEPT, {"ok": False, "tags": []})


def test_the_api_names_properties_the_schema_does_not_have() -> None:
    assert by_api(one({"type": "string"}), {"p": "x", "q": 1}) == (
        REFUSE,
        {"q": ["The question has no such field."]},
    )


def json_values(field: FieldSpec) -> st.SearchStrategy[Any]:
    """JSON values of the field's own type: valid, invalid, and edge ones."""
    if field.kind is Kind.BOOLEAN:
        return st.booleans()
    if field.kind in (Kind.NUMBER, Kind.INTEGER):
        edges = [0.5, -0.0, 1e16, 2.0, 1e-7, 1e300, 2**60, 10**350, -(10**450)]
        return some_numbers | st.integers() | st.sampled_from(edges)
    if field.kind is Kind.STRING:
        return (
            any_text
            | format_values(field.format)
            | format_values(field.format).map(lambda text: f" {text} ")
        )
    options = st.sampled_from(field.option_values())
    if field.kind is Kind.SINGLE_SELECT:
        return options
    return st.lists(options, max_size=len(field.options) + 2)


@settings(
    deadline=None,
    max_examples=examples(200),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.data())
def test_random_answers_get_the_same_verdict_from_form_and_api(data: Any) -> None:
    schema = data.draw(schemas())
    spec = classify(schema)
    content: dict[str, Any] = {}
    for field in spec:
        # Left out only where a browser can say "no answer" too (see the module's docstring).
        may_skip = field.kind is not Kind.BOOLEAN and not (
            field.required and field.kind is Kind.MULTI_SELECT
        )
        if may_skip and data.draw(st.booleans()):
            continue
        content[field.prop] = data.draw(json_values(field))
    api, form = by_api(schema, content), by_form(schema, content)
    lenient = {f.prop for f in spec if f.format == "date-time"}
    if api[0] == REFUSE and set(api[1]) <= lenient:
        return  # the form may read it as a typed date and time; see the module's docstring
    if form[0] == REFUSE and api[0] == REFUSE:
        # The same fields refused for the same reasons (date-time fields aside).
        assert {p: m for p, m in api[1].items() if p not in lenient} == {
            p: m for p, m in form[1].items() if p not in lenient
        }
        return
    assert api == form, content
