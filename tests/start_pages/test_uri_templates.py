"""Resource templates (RFC 6570) on the start page: their variables, their URI, and the
templates a server got wrong."""

from __future__ import annotations

import pytest

from mrtrweb.elicitation import field_name_for
from mrtrweb.start_pages.uri_templates import (
    MalformedTemplate,
    TemplateForm,
    expand_uri_template,
    template_variables,
)


def test_uri_templates_are_expanded_with_encoding():
    assert template_variables("peer://docs/{section}/{page}{?q,lang}") == [
        "section",
        "page",
        "q",
        "lang",
    ]
    values = {"section": "a/b c", "page": "7", "q": "x&y", "lang": ""}
    assert (
        expand_uri_template("peer://docs/{section}/{page}{?q,lang}", values)
        == "peer://docs/a%2Fb%20c/7?q=x%26y&lang="
    )
    assert expand_uri_template("file://{+path}", {"path": "/etc/x y"}) == "file:///etc/x%20y"
    assert expand_uri_template("x{/a,b}{#c}", {"a": "1", "b": "2", "c": "d"}) == "x/1/2#d"
    assert expand_uri_template("{a:2}", {"a": "hello"}) == "he"


def test_reserved_expansion_keeps_pct_encoded_triplets_and_encodes_the_rest():
    # RFC 6570 3.2.3: {+var} and {#var} pass reserved characters and pct-encoded triplets,
    # and encode everything else (uritemplate alone copies "a b%2F" with its space).
    assert expand_uri_template("file://{+path}", {"path": "/a b%2Fc"}) == "file:///a%20b%2Fc"
    assert expand_uri_template("{#frag}", {"frag": "50% off"}) == "#50%25%20off"
    assert expand_uri_template("{+half}", {"half": "50%"}) == "50%25"
    # The prefix counts characters of the value, before it is encoded.
    assert expand_uri_template("{+path:3}", {"path": "a b%2F"}) == "a%20b"
    # The same value in a simple expression has its "%" encoded, as the RFC says.
    assert expand_uri_template("{+p}/{p}", {"p": "a%2F"}) == "a%2F/a%252F"
    assert expand_uri_template("{;x,y,empty}", {"x": "1", "y": "é", "empty": ""}) == (
        ";x=1;y=%C3%A9;empty"
    )


@pytest.mark.parametrize(
    "template",
    ["peer://{", "peer://{a}}", "{a{b}", "{}", "{?}", "{a,,b}", "{a b}", "{a:x}", "{a:0}", "{=a}"],
)
def test_a_malformed_template_is_refused_with_the_reason(template: str):
    with pytest.raises(MalformedTemplate):
        template_variables(template)
    form = TemplateForm(template, data={})
    assert form.fields == {} and form.malformed
    assert not form.is_valid()
    assert "This resource template is malformed" in form.non_field_errors()[0]


def test_a_well_formed_template_validates_and_gives_its_uri():
    form = TemplateForm(
        "peer://items/{item_id}{?v}",
        data={f"var-{field_name_for('item_id')}": "a/b", f"var-{field_name_for('v')}": "2"},
    )
    assert form.is_valid(), form.errors
    assert form.uri() == "peer://items/a%2Fb?v=2"


def test_values_that_make_a_uri_too_long_to_keep_are_refused():
    """The call keeps the URI as its target (2000 characters at most): a longer one is
    refused on the form, not by the database (PostgreSQL would fail the request)."""
    name = f"var-{field_name_for('item_id')}"
    too_long = TemplateForm("peer://items/{item_id}", data={name: "x" * 1990})
    assert not too_long.is_valid()
    assert "longer than 2000 characters" in too_long.non_field_errors()[0]
    fits = TemplateForm("peer://items/{item_id}", data={name: "x" * 1987})
    assert fits.is_valid(), fits.errors
    assert len(fits.uri()) == 2000
