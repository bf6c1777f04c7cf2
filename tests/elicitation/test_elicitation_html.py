"""The rendered form: controls, labels, help text and error wiring for assistive technology.

Rendered with Django's default form rendering (``{{ form }}``, the div template), which is
what the round page uses.
"""

from __future__ import annotations

from typing import Any

import pytest

from mrtrweb.elicitation import build_form, field_name_for, prefix_for_key
from tests.elicitation.real_schemas import SDK_BOOKING
from tests.elicitation.support import by_id, controls, elements, post

KEY = '__main__:ask "name" <x>'
PREFIX = prefix_for_key(KEY)


def name_of(prop: str) -> str:
    return f"{PREFIX}-{field_name_for(prop)}"


def render(schema: dict[str, Any], answers: dict[str, Any] | None = None, **kw: Any) -> str:
    data = None if answers is None else post(PREFIX, answers)
    form = build_form(schema, prefix=PREFIX, data=data, **kw)
    if data is not None:
        form.is_valid()
    return str(form)


def only(html: str, prop: str):
    found = controls(html, name_of(prop))
    assert len(found) == 1, found
    return found[0]


def labels_for(html: str, element_id: str) -> list[str]:
    return [
        el.text.strip()
        for el in elements(html)
        if el.tag == "label" and el.attrs.get("for") == element_id
    ]


def test_input_types_and_constraint_attributes():
    html = render(SDK_BOOKING)
    name = only(html, "name")
    assert (name.tag, name.attrs["type"]) == ("input", "text")
    assert (name.attrs["minlength"], name.attrs["maxlength"]) == ("2", "40")
    assert "required" in name.attrs
    assert only(html, "email").attrs["type"] == "email"
    assert only(html, "website").attrs["type"] == "url"
    assert only(html, "arrival").attrs["type"] == "date"
    assert only(html, "callback_at").attrs["type"] == "datetime-local"
    guests = only(html, "guests")
    assert (guests.attrs["type"], guests.attrs["step"]) == ("number", "1")
    assert (guests.attrs["min"], guests.attrs["max"]) == ("1", "8")
    budget = only(html, "budget")
    assert (budget.attrs["type"], budget.attrs["step"], budget.attrs["min"]) == (
        "number",
        "any",
        "0",
    )
    assert "required" not in budget.attrs
    assert only(html, "breakfast").attrs["type"] == "checkbox"
    rooms = controls(html, name_of("room"))
    assert [r.attrs["type"] for r in rooms] == ["radio"] * 4  # 3 rooms + "No answer"
    extras = controls(html, name_of("extras"))
    assert [e.attrs["type"] for e in extras] == ["checkbox"] * 3
    assert all("required" not in e.attrs for e in extras)


def test_integer_bounds_are_rounded_inwards_for_the_browser():
    html = render(
        {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0.5, "maximum": 9.9}}}
    )
    n = only(html, "n")
    assert (n.attrs["min"], n.attrs["max"], n.attrs["step"]) == ("1", "9", "1")


def test_required_boolean_has_no_required_attribute():
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    assert "required" not in only(render(schema), "ok").attrs


def test_long_strings_get_a_textarea():
    schema = {"type": "object", "properties": {"bio": {"type": "string", "maxLength": 2000}}}
    assert only(render(schema), "bio").tag == "textarea"


def single(n: int, *, required: bool) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"c": {"type": "string", "enum": [f"o{i}" for i in range(n)]}},
        **({"required": ["c"]} if required else {}),
    }


def test_up_to_five_options_are_radio_buttons_more_are_a_select():
    five = controls(render(single(5, required=True)), name_of("c"))
    assert [c.attrs["type"] for c in five] == ["radio"] * 5
    assert all("required" in c.attrs for c in five)
    six = render(single(6, required=True))
    select = only(six, "c")
    assert select.tag == "select" and "required" in select.attrs
    options = [el for el in elements(six) if el.tag == "option"]
    # A blank placeholder first, so nothing is chosen for the person by default.
    assert [o.attrs["value"] for o in options] == ["", "0", "1", "2", "3", "4", "5"]
    assert [o.text.strip() for o in options] == ["Choose…", "o0", "o1", "o2", "o3", "o4", "o5"]


def test_optional_radio_group_offers_no_answer_checked_by_default():
    radios = controls(render(single(2, required=False)), name_of("c"))
    assert [r.attrs["value"] for r in radios] == ["0", "1", ""]
    assert "checked" in radios[-1].attrs
    assert all("required" not in r.attrs for r in radios)


def test_every_control_has_a_label_with_the_title_or_property_name():
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "title": "Your name"},
            "plain": {"type": "integer"},
            "ok": {"type": "boolean", "title": "Agree"},
        },
    }
    html = render(schema)
    # No colon: a checkbox's label follows the box.
    for prop, text in (("name", "Your name"), ("plain", "plain"), ("ok", "Agree")):
        control = only(html, prop)
        assert labels_for(html, control.attrs["id"]) == [text]


def test_radio_and_checkbox_groups_are_fieldsets_with_a_legend_and_labelled_options():
    schema = {
        "type": "object",
        "properties": {
            "c": {
                "type": "string",
                "title": "Pick",
                "description": "One only",
                "oneOf": [{"const": "lo", "title": "Low"}, {"const": "hi", "title": "High"}],
            }
        },
        "required": ["c"],
    }
    html = render(schema)
    fieldsets = [el for el in elements(html) if el.tag == "fieldset"]
    assert len(fieldsets) == 1
    legends = [el for el in elements(html) if el.tag == "legend"]
    assert [legend.text.strip() for legend in legends] == ["Pick"]
    ids = by_id(html)
    assert ids[fieldsets[0].attrs["aria-describedby"]].text.strip() == "One only"
    for radio, title in zip(controls(html, name_of("c")), ("Low", "High"), strict=True):
        assert labels_for(html, radio.attrs["id"]) == [title]


def test_description_is_help_text_tied_with_aria_describedby():
    schema = {
        "type": "object",
        "properties": {"age": {"type": "integer", "description": "In whole years"}},
    }
    html = render(schema)
    age = only(html, "age")
    help_id = age.attrs["aria-describedby"]
    assert help_id == f"{age.attrs['id']}_helptext"
    # The description, then the limits in words ("A whole number.": it is an integer).
    assert by_id(html)[help_id].text.split() == ["In", "whole", "years", "A", "whole", "number."]


def test_limits_are_said_before_submitting_and_set_as_attributes():
    schema = {
        "type": "object",
        "properties": {
            "reason": {"type": "string", "minLength": 3, "maxLength": 20},
            "replicas": {"type": "integer", "minimum": 1, "maximum": 10},
            "ratio": {"type": "number", "minimum": 0},
            "mail": {"type": "string", "format": "email"},
            "tags": {
                "type": "array",
                "items": {"type": "string", "enum": ["a", "b", "c"]},
                "minItems": 1,
                "maxItems": 2,
            },
        },
        "required": ["reason"],
    }
    html = render(schema)
    ids = by_id(html)

    def said(prop: str) -> str:
        control = controls(html, name_of(prop))[0]
        described = control.attrs.get("aria-describedby")
        if described is None:  # checkboxes: their fieldset is described
            described = next(
                el.attrs["aria-describedby"]
                for el in elements(html)
                if el.tag == "fieldset" and "aria-describedby" in el.attrs
            )
        return " ".join(ids[described].text.split())

    reason = only(html, "reason")
    assert (reason.attrs["minlength"], reason.attrs["maxlength"]) == ("3", "20")
    assert "required" in reason.attrs
    assert said("reason") == "Between 3 and 20 characters."
    replicas = only(html, "replicas")
    assert (replicas.attrs["min"], replicas.attrs["max"], replicas.attrs["step"]) == (
        "1",
        "10",
        "1",
    )
    assert said("replicas") == "A whole number from 1 to 10."
    assert said("ratio") == "A number, 0 or more."
    assert said("mail") == "An email address, such as name@example.org."
    assert said("tags") == "Choose 1 to 2."


def test_a_description_is_escaped_beside_the_limits():
    schema = {
        "type": "object",
        "properties": {"x": {"type": "string", "maxLength": 5, "description": "<b>bold</b>"}},
    }
    html = render(schema)
    assert "<b>bold</b>" not in html and "&lt;b&gt;bold&lt;/b&gt;" in html
    assert "At most 5 characters." in html


def test_no_description_means_no_aria_describedby():
    html = render({"type": "object", "properties": {"x": {"type": "string"}}})
    assert "aria-describedby" not in only(html, "x").attrs


def test_invalid_field_is_marked_and_its_error_is_described():
    schema = {
        "type": "object",
        "properties": {
            "age": {"type": "integer", "description": "In whole years", "maximum": 150},
            "name": {"type": "string"},
        },
        "required": ["age"],
    }
    html = render(schema, {"age": "151", "name": "Bo"})
    age = only(html, "age")
    assert age.attrs["aria-invalid"] == "true"
    described = age.attrs["aria-describedby"].split()
    assert described == [f"{age.attrs['id']}_helptext", f"{age.attrs['id']}_error"]
    error = by_id(html)[f"{age.attrs['id']}_error"]
    assert error.text.strip() == "Enter a number less than or equal to 150."
    assert age.attrs["value"] == "151"  # what the person typed stays for them to fix
    name = only(html, "name")
    assert "aria-invalid" not in name.attrs


def test_invalid_radio_group_marks_each_option():
    html = render(single(2, required=True), {"c": "9"})
    radios = controls(html, name_of("c"))
    assert all(r.attrs.get("aria-invalid") == "true" for r in radios)
    fieldset = next(el for el in elements(html) if el.tag == "fieldset")
    assert fieldset.attrs["aria-describedby"].endswith("_error")


@pytest.mark.parametrize(
    "evil", ["<script>alert(1)</script>", '"><img src=x onerror=alert(1)>', "&lt;b&gt;"]
)
def test_server_strings_are_escaped_everywhere(evil):
    schema = {
        "type": "object",
        "properties": {
            evil: {"type": "string", "title": evil, "description": evil, "default": evil},
            "c": {"type": "string", "oneOf": [{"const": evil, "title": evil}]},
            "m": {"type": "string", "enum": [evil]},
        },
    }
    html = render(schema)
    assert "<script>" not in html and "<img" not in html
    assert "&lt;b&gt;" not in html or "&amp;lt;b&amp;gt;" in html
    # And it still reads as the server wrote it.
    texts = [el.text for el in elements(html)]
    assert any(evil in text for text in texts)


def test_ids_and_names_use_only_safe_characters():
    schema = {
        "type": "object",
        "properties": {
            'a b"c': {"type": "string"},
            "ü/ß": {"type": "boolean"},
            "": {"type": "integer"},
        },
    }
    html = render(schema)
    for el in elements(html):
        for attr in ("id", "name", "for"):
            if attr in el.attrs:
                assert all((ch.isalnum() and ch.isascii()) or ch in "_-" for ch in el.attrs[attr])


def test_datetime_help_names_the_time_zone():
    import datetime as dt

    schema = {
        "type": "object",
        "properties": {"t": {"type": "string", "format": "date-time", "description": "When"}},
    }
    html = render(schema, tz=dt.timezone(dt.timedelta(hours=2)))
    t = only(html, "t")
    assert by_id(html)[t.attrs["aria-describedby"]].text.strip() == "When Time zone: UTC+02:00."
