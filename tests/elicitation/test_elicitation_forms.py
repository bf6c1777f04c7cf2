"""build_form() + content_from(): every field kind and constraint, valid and invalid posts."""

from __future__ import annotations

import datetime as dt
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import mcp_types
import pytest

from mrtrweb.elicitation import (
    accept_result,
    build_form,
    classify,
    content_from,
    field_name_for,
    prefix_for_key,
)
from tests.elicitation.real_schemas import (
    FASTMCP,
    SDK_ASK_NAME,
    SDK_BOOKING,
    AskName,
    Booking,
    Color,
    fastmcp_accepts,
    sdk_accepts,
)
from tests.elicitation.support import content_problems, index_of, post, untouched_post

PREFIX = "p"
PLUS_TWO = dt.timezone(dt.timedelta(hours=2))


def one(definition: dict[str, Any], *, required: bool = False) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"p": definition},
        **({"required": ["p"]} if required else {}),
    }


def submit(schema: dict[str, Any], answers: dict[str, Any], **kwargs: Any):
    form = build_form(schema, prefix=PREFIX, data=post(PREFIX, answers), **kwargs)
    return form


def accepted(schema: dict[str, Any], answers: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    form = submit(schema, answers, **kwargs)
    assert form.is_valid(), form.errors
    content = content_from(form)
    assert content_problems(schema, content) == []
    return content


def refused(schema: dict[str, Any], answers: dict[str, Any], **kwargs: Any) -> list[str]:
    form = submit(schema, answers, **kwargs)
    assert not form.is_valid()
    with pytest.raises(ValueError, match="not valid"):
        content_from(form)
    return [str(message) for messages in form.errors.values() for message in messages]


# -- strings -------------------------------------------------------------------------------


def test_required_string_missing_empty_or_blank_is_refused():
    schema = one({"type": "string"}, required=True)
    for raw in (None, "", "   "):
        assert refused(schema, {"p": raw}) == ["This field is required."]


def test_optional_string_left_empty_is_omitted():
    schema = one({"type": "string"})
    assert accepted(schema, {"p": ""}) == {}
    assert accepted(schema, {}) == {}


def test_string_is_stripped():
    assert accepted(one({"type": "string"}), {"p": "  Bo \n"}) == {"p": "Bo"}


def test_string_lengths_count_code_points_not_utf16_units():
    schema = one({"type": "string", "minLength": 2, "maxLength": 3})
    assert accepted(schema, {"p": "😀😀"}) == {"p": "😀😀"}
    assert accepted(schema, {"p": "åäö"}) == {"p": "åäö"}
    assert refused(schema, {"p": "😀"}) == ["Enter at least 2 characters (you entered 1)."]
    assert refused(schema, {"p": "😀😀😀😀"}) == ["Enter at most 3 characters (you entered 4)."]


def test_nul_characters_are_refused():
    refused(one({"type": "string"}), {"p": "a\x00b"})


@pytest.mark.parametrize("raw", ["bo@example.com", "a.b+c@sub.example.org"])
def test_email_valid(raw):
    assert accepted(one({"type": "string", "format": "email"}), {"p": raw}) == {"p": raw}


@pytest.mark.parametrize("raw", ["bo", "bo@", "@example.com", "bo@@example.com", "b o@example.com"])
def test_email_invalid(raw):
    assert refused(one({"type": "string", "format": "email"}), {"p": raw}) == [
        "Enter a valid email address."
    ]


@pytest.mark.parametrize(
    "raw",
    [
        "https://example.com/a/b?c=d&e#frag",
        "http://[2001:db8::1]:8080/",
        "urn:isbn:0451450523",
        "mailto:bo@example.com",
        "https://example.com/%E2%9C%93",
    ],
)
def test_uri_valid(raw):
    assert accepted(one({"type": "string", "format": "uri"}), {"p": raw}) == {"p": raw}


@pytest.mark.parametrize(
    "raw",
    [
        "example.com",  # no scheme: not assumed
        "/relative/path",
        "https://exa mple.com/",
        "https://bücher.de/",  # an IRI, not a URI
        "https://example.com/%zz",
        "http://[not-an-ip]/",
        "1http://example.com",
    ],
)
def test_uri_invalid(raw):
    errors = refused(one({"type": "string", "format": "uri"}), {"p": raw})
    assert errors == ["Enter a full address including its scheme, such as https://example.com/."]


def test_date_is_sent_as_yyyy_mm_dd():
    schema = one({"type": "string", "format": "date"}, required=True)
    assert accepted(schema, {"p": "2026-02-28"}) == {"p": "2026-02-28"}
    for raw in ("2026-02-30", "28.02.2026", "2026-2-28", "2026-02-28T00:00"):
        assert refused(schema, {"p": raw}) == ["Enter a valid date (YYYY-MM-DD)."]


def test_datetime_without_offset_is_local_time_sent_with_its_offset():
    schema = one({"type": "string", "format": "date-time"}, required=True)
    # What <input type=datetime-local> sends, with and without seconds.
    assert accepted(schema, {"p": "2026-08-01T09:30"}, tz=PLUS_TWO) == {
        "p": "2026-08-01T09:30:00+02:00"
    }
    assert accepted(schema, {"p": "2026-08-01T09:30:15.750"}, tz=PLUS_TWO) == {
        "p": "2026-08-01T09:30:15+02:00"
    }
    assert accepted(schema, {"p": "2026-08-01T09:30"}, tz=dt.UTC) == {
        "p": "2026-08-01T09:30:00+00:00"
    }


def test_datetime_typed_with_an_offset_keeps_it():
    schema = one({"type": "string", "format": "date-time"})
    assert accepted(schema, {"p": "2026-08-01T09:30:00Z"}, tz=PLUS_TWO) == {
        "p": "2026-08-01T09:30:00+00:00"
    }
    assert accepted(schema, {"p": "2026-08-01T09:30-05:00"}, tz=PLUS_TWO) == {
        "p": "2026-08-01T09:30:00-05:00"
    }


def test_datetime_uses_djangos_current_time_zone_by_default(settings):
    from django.utils import timezone

    schema = one({"type": "string", "format": "date-time"})
    with timezone.override(dt.timezone(dt.timedelta(hours=-3))):
        assert accepted(schema, {"p": "2026-08-01T09:30"}) == {"p": "2026-08-01T09:30:00-03:00"}


@pytest.mark.parametrize("raw", ["tomorrow", "2026-13-01T00:00", "2026-08-01T25:00", "09:30"])
def test_datetime_invalid(raw):
    schema = one({"type": "string", "format": "date-time"})
    assert refused(schema, {"p": raw}, tz=PLUS_TWO) == ["Enter a valid date and time."]


def zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except ZoneInfoNotFoundError:  # pragma: no cover - depends on the system tz database
        pytest.skip(f"time zone {name} not installed")


def test_datetime_in_a_daylight_saving_gap_is_refused_and_overlap_takes_the_first():
    oslo = zone("Europe/Oslo")
    schema = one({"type": "string", "format": "date-time"})
    assert refused(schema, {"p": "2026-03-29T02:30"}, tz=oslo) == [
        "This time does not exist in Europe/Oslo: the clocks change then."
    ]
    assert accepted(schema, {"p": "2026-10-25T02:30"}, tz=oslo) == {
        "p": "2026-10-25T02:30:00+02:00"
    }
    assert accepted(schema, {"p": "2026-01-15T08:00"}, tz=oslo) == {
        "p": "2026-01-15T08:00:00+01:00"
    }


def test_datetime_with_a_historic_seconds_offset_is_sent_in_utc():
    # Paris kept local mean time (+00:09:21) until 1911; RFC 3339 offsets have no seconds.
    schema = one({"type": "string", "format": "date-time"})
    assert accepted(schema, {"p": "1900-01-01T12:00"}, tz=zone("Europe/Paris")) == {
        "p": "1900-01-01T11:50:39+00:00"
    }


# -- numbers -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "value"),
    [("3", 3), ("3.0", 3), ("-3.25", -3.25), ("1e3", 1000), (" 0.1 ", 0.1), ("-0", 0), (".5", 0.5)],
)
def test_number_is_a_json_number(raw, value):
    content = accepted(one({"type": "number"}), {"p": raw})
    assert content == {"p": value}
    assert type(content["p"]) is type(value)


@pytest.mark.parametrize(
    "raw", ["abc", "NaN", "nan", "inf", "Infinity", "1e400", "1,5", "٣", "0x10", "1_000", "--1"]
)
def test_number_invalid(raw):
    assert refused(one({"type": "number"}), {"p": raw}) in (
        ["Enter a number."],
        ["Enter a smaller number."],
    )


def test_number_bounds_are_inclusive_and_compared_as_sent():
    schema = one({"type": "number", "minimum": -1.5, "maximum": 0.1})
    assert accepted(schema, {"p": "0.1"}) == {"p": 0.1}
    assert accepted(schema, {"p": "-1.5"}) == {"p": -1.5}
    assert refused(schema, {"p": "0.1000001"}) == ["Enter a number less than or equal to 0.1."]
    assert refused(schema, {"p": "-2"}) == ["Enter a number greater than or equal to -1.5."]


@pytest.mark.parametrize(("raw", "value"), [("3", 3), ("3.0", 3), ("1e2", 100), ("-7", -7)])
def test_integer_is_a_json_int(raw, value):
    content = accepted(one({"type": "integer"}, required=True), {"p": raw})
    assert content == {"p": value}
    assert type(content["p"]) is int


@pytest.mark.parametrize("raw", ["3.5", "abc", "1e-1", "true"])
def test_integer_invalid(raw):
    assert refused(one({"type": "integer"}), {"p": raw}) == ["Enter a whole number."]


def test_integer_of_absurd_size_is_refused_not_crashed():
    assert refused(one({"type": "integer"}), {"p": "9" * 350}) == ["Enter a smaller number."]
    assert refused(one({"type": "integer"}), {"p": "9" * 5000}) == ["Enter a shorter number."]
    assert refused(one({"type": "number"}), {"p": "0." + "0" * 5000}) == ["Enter a shorter number."]
    assert refused(one({"type": "integer"}), {"p": "1e999999999"}) == ["Enter a smaller number."]


def test_integer_bounds_with_fractional_limits():
    schema = one({"type": "integer", "minimum": 1.5, "maximum": 4.5})
    assert refused(schema, {"p": "1"}) == ["Enter a number greater than or equal to 1.5."]
    assert accepted(schema, {"p": "2"}) == {"p": 2}
    assert accepted(schema, {"p": "4"}) == {"p": 4}
    assert refused(schema, {"p": "5"}) == ["Enter a number less than or equal to 4.5."]


def test_required_number_missing_and_optional_number_omitted():
    assert refused(one({"type": "number"}, required=True), {"p": ""}) == ["This field is required."]
    assert accepted(one({"type": "number"}), {"p": ""}) == {}


# -- booleans ------------------------------------------------------------------------------


@pytest.mark.parametrize("required", [True, False])
def test_unchecked_checkbox_is_false_and_always_sent(required):
    schema = one({"type": "boolean"}, required=required)
    assert accepted(schema, {}) == {"p": False}
    assert accepted(schema, {"p": "on"}) == {"p": True}


# -- single selects ------------------------------------------------------------------------


def test_single_select_sends_the_value_never_the_title():
    schema = one(
        {
            "type": "string",
            "oneOf": [{"const": "lo", "title": "Low"}, {"const": "hi", "title": "High"}],
        },
        required=True,
    )
    assert accepted(schema, {"p": index_of(schema, "p", "hi")}) == {"p": "hi"}
    assert refused(schema, {"p": "High"}) == ["Select a valid choice."]
    assert refused(schema, {"p": "hi"}) == ["Select a valid choice."]


def test_legacy_enum_names_send_the_enum_value():
    schema = one({"type": "string", "enum": ["s", "m"], "enumNames": ["Small", "Medium"]})
    assert accepted(schema, {"p": "1"}) == {"p": "m"}


@pytest.mark.parametrize("raw", ["2", "-1", "x", "01x", "\u0661", "1.0"])
def test_single_select_out_of_range(raw):
    assert refused(one({"type": "string", "enum": ["a", "b"]}), {"p": raw}) == [
        "Select a valid choice."
    ]


def test_enum_values_that_are_empty_or_odd_strings_survive():
    values = ["", " ", "<b>", "0", "a\"'b"]
    schema = one({"type": "string", "enum": values}, required=True)
    for i, value in enumerate(values):
        assert accepted(schema, {"p": str(i)}) == {"p": value}
    # The blank HTML value is "no answer", never the option "".
    assert refused(schema, {"p": ""}) == ["This field is required."]


def test_optional_single_select_left_empty_is_omitted():
    assert accepted(one({"type": "string", "enum": ["a"]}), {"p": ""}) == {}
    assert accepted(one({"type": "string", "enum": ["a"]}), {}) == {}


# -- multi selects -------------------------------------------------------------------------


def multi(**extra: Any) -> dict[str, Any]:
    return {
        "type": "array",
        "items": {"anyOf": [{"const": c, "title": c.upper()} for c in ("a", "b", "c", "d")]},
        **extra,
    }


def test_multi_select_sends_values_in_option_order_without_duplicates():
    schema = one(multi())
    assert accepted(schema, {"p": ["2", "0", "2"]}) == {"p": ["a", "c"]}


def test_untitled_multi_select():
    schema = one({"type": "array", "items": {"type": "string", "enum": ["x", "y"]}})
    assert accepted(schema, {"p": ["1"]}) == {"p": ["y"]}


def test_multi_select_item_bounds():
    schema = one(multi(minItems=2, maxItems=3), required=True)
    assert refused(schema, {"p": ["0"]}) == ["Select at least 2."]
    assert refused(schema, {}) == ["Select at least 2."]
    assert accepted(schema, {"p": ["0", "3"]}) == {"p": ["a", "d"]}
    assert refused(schema, {"p": ["0", "1", "2", "3"]}) == ["Select at most 3."]


def test_required_multi_select_with_nothing_ticked_is_an_empty_list():
    assert accepted(one(multi(), required=True), {}) == {"p": []}


def test_optional_multi_select_with_nothing_ticked_is_omitted_even_with_min_items():
    assert accepted(one(multi(minItems=2)), {}) == {}
    assert refused(one(multi(minItems=2)), {"p": ["1"]}) == ["Select at least 2."]


@pytest.mark.parametrize("raw", [["4"], ["a"], ["0", "x"], [""]])
def test_multi_select_invalid_choice(raw):
    assert refused(one(multi()), {"p": raw}) == ["Select a valid choice."]


# -- defaults and initial ------------------------------------------------------------------


def initial_of(schema: dict[str, Any], prop: str = "p", **kwargs: Any) -> Any:
    form = build_form(schema, prefix=PREFIX, **kwargs)
    return form[field_name_for(prop)].value()


def test_defaults_are_prefilled():
    assert initial_of(one({"type": "string", "default": "Bo"})) == "Bo"
    assert initial_of(one({"type": "integer", "default": 3})) == "3"
    assert initial_of(one({"type": "integer", "default": 3.0})) == "3"
    assert initial_of(one({"type": "number", "default": 0.5})) == "0.5"
    assert initial_of(one({"type": "boolean", "default": True})) is True
    assert initial_of(one({"type": "string", "enum": ["a", "b"], "default": "b"})) == "1"
    assert initial_of(one(multi(default=["d", "b"]))) == ["3", "1"]
    assert initial_of(one({"type": "string", "format": "date", "default": "2026-01-02"})) == (
        "2026-01-02"
    )


def test_datetime_default_is_shown_in_local_time():
    schema = one({"type": "string", "format": "date-time", "default": "2026-08-01T07:30:00Z"})
    assert initial_of(schema, tz=PLUS_TWO) == "2026-08-01T09:30:00"
    # An offset-less default (pydantic renders naive datetimes so) is read as local time.
    naive = one({"type": "string", "format": "date-time", "default": "2026-08-01T07:30:00"})
    assert initial_of(naive, tz=PLUS_TWO) == "2026-08-01T07:30:00"


def test_datetime_before_the_year_1000_keeps_four_digits():
    # Found by tests/fuzz: strftime wrote the year 13 as "13", which datetime-local cannot
    # show, so an early default (or a refused post) came back empty.
    early = one({"type": "string", "format": "date-time", "default": "0013-07-24T04:58:14Z"})
    assert initial_of(early, tz=dt.UTC) == "0013-07-24T04:58:14"
    typed = post(PREFIX, {"p": "0013-07-24T04:58:14"})
    form = build_form(early, prefix=PREFIX, data=typed, tz=dt.UTC)
    assert form[field_name_for("p")].value() == "0013-07-24T04:58:14"


@pytest.mark.parametrize(
    "definition",
    [
        {"type": "string", "minLength": 3, "default": "ab"},
        {"type": "string", "format": "email", "default": "nope"},
        {"type": "string", "format": "date", "default": "yesterday"},
        {"type": "integer", "default": 1.5},
        {"type": "number", "minimum": 0, "default": -1},
        {"type": "string", "enum": ["a"], "default": "z"},
        {"type": "array", "items": {"type": "string", "enum": ["a"]}, "default": ["z"]},
        {
            "type": "array",
            "items": {"type": "string", "enum": ["a", "b"]},
            "maxItems": 1,
            "default": ["a", "b"],
        },
    ],
)
def test_default_that_breaks_its_own_constraints_is_dropped(definition):
    value = initial_of(one(definition))
    assert value in (None, "", [])


def test_initial_overrides_default():
    schema = one({"type": "string", "default": "Bo"})
    assert initial_of(schema, initial={field_name_for("p"): "Al"}) == "Al"


def test_defaults_are_not_sent_for_fields_the_person_emptied():
    schema = one({"type": "string", "default": "Bo"})
    assert accepted(schema, {"p": ""}) == {}


# -- forms as a whole ----------------------------------------------------------------------


def test_unbound_form_has_no_content():
    form = build_form(one({"type": "string"}), prefix=PREFIX)
    with pytest.raises(ValueError, match="not bound"):
        content_from(form)


def test_only_declared_properties_are_read_from_the_post():
    schema = one({"type": "string"})
    data = post(PREFIX, {"p": "x", "other": "y"})
    data["p-injected"] = "z"
    data[field_name_for("p")] = "unprefixed"
    form = build_form(schema, prefix=PREFIX, data=data)
    assert form.is_valid()
    assert content_from(form) == {"p": "x"}


def test_two_requests_on_one_page_do_not_mix():
    schema = one({"type": "string"}, required=True)
    first, second = prefix_for_key("__main__:ask_name"), prefix_for_key("__main__:ask_age")
    data = post(first, {"p": "Bo"})
    data.update(post(second, {"p": "41"}))
    assert content_from(build_form(schema, prefix=first, data=data)) == {"p": "Bo"}
    assert content_from(build_form(schema, prefix=second, data=data)) == {"p": "41"}


def test_build_form_accepts_a_classified_spec():
    spec = classify(SDK_ASK_NAME)
    form = build_form(spec, prefix=PREFIX, data=post(PREFIX, {"name": "Bo"}))
    assert content_from(form) == {"name": "Bo"}


def test_accept_result_is_an_mcp_types_elicit_result():
    form = submit(SDK_ASK_NAME, {"name": "Bo"})
    result = accept_result(form)
    assert isinstance(result, mcp_types.ElicitResult)
    assert result.model_dump(by_alias=True, exclude_none=True) == {
        "action": "accept",
        "content": {"name": "Bo"},
    }
    sdk_accepts(AskName, result.content)


def test_sdk_booking_round_trip_is_accepted_by_the_sdk_model():
    schema = SDK_BOOKING
    answers = {
        "name": "Bo Ek",
        "email": "bo@example.com",
        "guests": "2",
        "budget": "199.5",
        "breakfast": "on",
        "arrival": "2026-08-01",
        "callback_at": "2026-07-30T18:00",
        "room": index_of(schema, "room", "suite"),
        "extras": [index_of(schema, "extras", "crib"), index_of(schema, "extras", "parking")],
        "website": "https://example.com/",
    }
    content = accepted(schema, answers, tz=PLUS_TWO)
    assert content == {
        "name": "Bo Ek",
        "email": "bo@example.com",
        "guests": 2,
        "budget": 199.5,
        "breakfast": True,
        "arrival": "2026-08-01",
        "callback_at": "2026-07-30T18:00:00+02:00",
        "room": "suite",
        "extras": ["parking", "crib"],
        "website": "https://example.com/",
    }
    sdk_accepts(Booking, content)
    # Only the required fields typed in; everything else as the page pre-filled it.
    data = untouched_post(build_form(schema, prefix=PREFIX))
    data.update(
        post(
            PREFIX, {"name": "Bo", "email": "b@example.com", "guests": "1", "arrival": "2026-08-01"}
        )
    )
    form = build_form(schema, prefix=PREFIX, data=data)
    minimal = content_from(form)
    assert minimal == {
        "name": "Bo",
        "email": "b@example.com",
        "guests": 1,
        "breakfast": False,
        "arrival": "2026-08-01",
        "room": "double",  # the pre-checked default radio button is part of the post
    }
    sdk_accepts(Booking, minimal)


@pytest.mark.parametrize(
    ("name", "answer", "expected"),
    [
        ("str", "hello", "hello"),
        ("int", "42", 42),
        ("float", "2.5", 2.5),
        ("bool", "on", True),
        ("enum", "2", Color.BLUE),
        ("literal", "1", "medium"),
        ("titled_single", "1", "hi"),
        ("untitled_multi", ["0", "2"], ["x", "z"]),
        ("titled_multi", ["1"], ["hi"]),
    ],
)
def test_fastmcp_server_takes_our_content(name, answer, expected):
    schema, config = FASTMCP[name]
    content = accepted(schema, {"value": answer})
    assert fastmcp_accepts(config, content) == expected
