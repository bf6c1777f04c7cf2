"""parse_request(), answers_match() and initial_from_content(): answers across rounds."""

from __future__ import annotations

import copy
import datetime as dt
from typing import Any

import mcp_types
import pytest

from mrtrweb.elicitation import (
    FormRequest,
    InvalidElicitation,
    UrlRequest,
    answers_match,
    build_form,
    content_from,
    field_name_for,
    initial_from_content,
    parse_request,
)
from tests.elicitation.real_schemas import SDK_BOOKING
from tests.elicitation.support import post, untouched_post

NAME_SCHEMA = {
    "type": "object",
    "properties": {"name": {"title": "Name", "type": "string"}},
    "required": ["name"],
}


def form_request(message: str = "Your name?", schema: dict[str, Any] | None = None) -> dict:
    return {
        "method": "elicitation/create",
        "params": {"mode": "form", "message": message, "requestedSchema": schema or NAME_SCHEMA},
    }


def test_parse_form_request_with_and_without_mode():
    request = form_request()
    assert parse_request(request) == FormRequest(message="Your name?", schema=NAME_SCHEMA)
    del request["params"]["mode"]
    assert parse_request(request) == FormRequest(message="Your name?", schema=NAME_SCHEMA)


def test_parse_url_request():
    request = {
        "method": "elicitation/create",
        "params": {"mode": "url", "message": "Sign in", "url": "https://example.com/x"},
    }
    assert parse_request(request) == UrlRequest(message="Sign in", url="https://example.com/x")


def test_parse_mcp_types_models():
    model = mcp_types.ElicitRequest(
        params=mcp_types.ElicitRequestFormParams(message="m", requested_schema=NAME_SCHEMA)
    )
    assert parse_request(model) == FormRequest(message="m", schema=NAME_SCHEMA)
    url = mcp_types.ElicitRequest(
        params=mcp_types.ElicitRequestURLParams(message="m", url="https://example.com/")
    )
    assert parse_request(url) == UrlRequest(message="m", url="https://example.com/")


@pytest.mark.parametrize(
    "request_",
    [
        {"method": "sampling/createMessage", "params": {}},
        {"method": "elicitation/create"},
        {"method": "elicitation/create", "params": {"message": "m"}},
        {"method": "elicitation/create", "params": {"requestedSchema": NAME_SCHEMA}},
        {"method": "elicitation/create", "params": {"message": "m", "requestedSchema": "x"}},
        {"method": "elicitation/create", "params": {"mode": "url", "message": "m"}},
        {"method": "elicitation/create", "params": {"mode": "telepathy", "message": "m"}},
        {"method": "elicitation/create", "params": {"message": 5, "requestedSchema": {}}},
        ["not", "an", "object"],
    ],
)
def test_malformed_requests(request_):
    with pytest.raises(InvalidElicitation):
        parse_request(request_)


def test_answers_match_same_key_message_and_schema():
    old = ("__main__:ask_name", form_request())
    reordered = {"required": ["name"], "properties": NAME_SCHEMA["properties"], "type": "object"}
    assert answers_match(old, ("__main__:ask_name", form_request(schema=reordered)))
    model = mcp_types.ElicitRequest(
        params=mcp_types.ElicitRequestFormParams(message="Your name?", requested_schema=NAME_SCHEMA)
    )
    assert answers_match(old, ("__main__:ask_name", model))


def test_answers_do_not_match_when_anything_differs():
    old = ("__main__:ask_name", form_request())
    assert not answers_match(old, ("__main__:ask_age", form_request()))
    assert not answers_match(old, ("__main__:ask_name", form_request(message="Name?")))
    changed = copy.deepcopy(NAME_SCHEMA)
    changed["properties"]["name"]["maxLength"] = 10
    assert not answers_match(old, ("__main__:ask_name", form_request(schema=changed)))
    url = {
        "method": "elicitation/create",
        "params": {"mode": "url", "message": "m", "url": "https://x"},
    }
    assert not answers_match(("k", url), ("k", url))
    assert not answers_match(old, ("__main__:ask_name", {"method": "roots/list"}))


def test_answers_match_is_type_strict_about_numbers():
    a = form_request(
        schema={"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}}
    )
    b = form_request(
        schema={"type": "object", "properties": {"n": {"type": "integer", "minimum": 1.0}}}
    )
    c = form_request(
        schema={"type": "object", "properties": {"n": {"type": "boolean", "default": True}}}
    )
    d = form_request(
        schema={"type": "object", "properties": {"n": {"type": "boolean", "default": 1}}}
    )
    assert not answers_match(("k", a), ("k", b))
    assert not answers_match(("k", c), ("k", d))


def test_saved_content_prefills_the_same_form_and_posts_back_identically():
    tz = dt.timezone(dt.timedelta(hours=2))
    content = {
        "name": "Bo Ek",
        "email": "bo@example.com",
        "guests": 2,
        "budget": 0.5,
        "breakfast": True,
        "arrival": "2026-08-01",
        "callback_at": "2026-07-30T16:00:00+00:00",
        "room": "suite",
        "extras": ["parking", "crib"],
    }
    initial = initial_from_content(SDK_BOOKING, content)
    form = build_form(SDK_BOOKING, prefix="p", initial=initial, tz=tz)
    assert form[field_name_for("callback_at")].value() == "2026-07-30T18:00:00"
    assert form[field_name_for("website")].value() is None
    again = content_from(build_form(SDK_BOOKING, prefix="p", data=untouched_post(form), tz=tz))
    assert again == {**content, "callback_at": "2026-07-30T18:00:00+02:00"}


def test_omitted_optional_fields_stay_empty_instead_of_showing_defaults_again():
    schema = {
        "type": "object",
        "properties": {
            "nick": {"type": "string", "default": "Bo"},
            "room": {"type": "string", "enum": ["a", "b"], "default": "b"},
            "tags": {"type": "array", "items": {"type": "string", "enum": ["x"]}, "default": ["x"]},
        },
    }
    form = build_form(schema, prefix="p", initial=initial_from_content(schema, {}))
    assert content_from(build_form(schema, prefix="p", data=untouched_post(form))) == {}


def test_stale_values_are_skipped_so_defaults_show():
    schema = {
        "type": "object",
        "properties": {
            "room": {"type": "string", "enum": ["a", "b"], "default": "b"},
            "n": {"type": "integer", "maximum": 5, "default": 1},
            "tags": {"type": "array", "items": {"type": "string", "enum": ["x", "y"]}},
        },
    }
    initial = initial_from_content(schema, {"room": "gone", "n": 50, "tags": ["y", "zz"]})
    assert initial == {}
    form = build_form(schema, prefix="p", initial=initial)
    assert form[field_name_for("room")].value() == "1"
    assert form[field_name_for("n")].value() == "1"


def test_initial_from_content_uses_option_indices():
    schema = {
        "type": "object",
        "properties": {
            "c": {
                "type": "string",
                "oneOf": [{"const": "lo", "title": "Low"}, {"const": "hi", "title": "High"}],
            },
            "m": {
                "type": "array",
                "items": {
                    "anyOf": [{"const": "lo", "title": "Low"}, {"const": "hi", "title": "High"}]
                },
            },
            "b": {"type": "boolean"},
        },
    }
    initial = initial_from_content(schema, {"c": "hi", "m": ["hi", "lo"], "b": False})
    assert initial == {
        field_name_for("c"): "1",
        field_name_for("m"): ["1", "0"],
        field_name_for("b"): False,
    }
    data = post("p", {"c": "1", "m": ["1", "0"]})
    assert content_from(build_form(schema, prefix="p", data=data)) == {
        "c": "hi",
        "m": ["lo", "hi"],
        "b": False,
    }
