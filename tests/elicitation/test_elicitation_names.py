"""Request keys and property names are arbitrary strings; HTML names must be safe and reversible."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mrtrweb.elicitation import (
    build_form,
    content_from,
    field_name_for,
    key_for_prefix,
    prefix_for_key,
    prop_for_field_name,
)
from tests.elicitation.support import post

SAFE = re.compile(r"[A-Za-z0-9_-]+")
# Everything JSON can carry in a string, lone surrogates included.
any_text = st.text(alphabet=st.characters(codec=None, categories=None), max_size=40)


@given(any_text)
def test_field_names_round_trip_and_are_html_safe(prop):
    name = field_name_for(prop)
    assert SAFE.fullmatch(name)
    assert prop_for_field_name(name) == prop


@given(any_text, any_text)
def test_distinct_properties_get_distinct_field_names(a, b):
    assert (field_name_for(a) == field_name_for(b)) == (a == b)


@given(any_text)
def test_prefixes_are_fixed_length_safe_and_found_again(key):
    prefix = prefix_for_key(key)
    assert re.fullmatch(r"q[0-9a-f]{20}", prefix)
    assert key_for_prefix(prefix, ["other", key, "more"]) == key


def test_examples():
    assert field_name_for("") == "f"
    assert field_name_for("name") == "fbmFtZQ"
    assert prop_for_field_name("fbmFtZQ") == "name"
    assert prefix_for_key("__main__:ask_name") != prefix_for_key("__main__:ask_age")
    assert key_for_prefix(prefix_for_key("x"), ["y"]) is None


@pytest.mark.parametrize("bad", ["", "x", "fbmFtZQ=", "f!!", "fbmFtZR", "fé", "fA"])
def test_foreign_names_are_refused(bad):
    with pytest.raises(ValueError, match="not an elicitation field name"):
        prop_for_field_name(bad)


@given(key=any_text, prop=any_text, answer=st.text(min_size=1, max_size=20).filter(str.strip))
def test_any_key_and_property_survive_a_real_post(key, prop, answer):
    schema = {"type": "object", "properties": {prop: {"type": "string"}}, "required": [prop]}
    prefix = prefix_for_key(key)
    form = build_form(schema, prefix=prefix, data=post(prefix, {prop: answer}))
    if "\x00" in answer:
        assert not form.is_valid()
    else:
        assert content_from(form) == {prop: answer.strip()}
