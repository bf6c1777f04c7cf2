"""The form of a resource template (RFC 6570): one text field per variable, and the URI.

Expansion is the ``uritemplate`` package's. Two things it leaves to us:

- It checks no syntax: ``{a:x}`` raises a bare ``ValueError``, ``{?}`` or ``{a,,b}`` list a
  variable named ``""``, a stray ``}`` is copied into the URI. A server's template is checked
  against the RFC's grammar first (``check``), and a malformed one is said so, not expanded.
- In ``{+var}`` and ``{#var}`` it copies a value that holds any pct-encoded triplet unencoded
  as a whole (``"a b%2F"`` gives a URI with a space), where RFC 6570 section 3.2.3 keeps the
  triplets and encodes the rest. Those values are encoded here, the prefix applied first.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from django import forms
from uritemplate import URITemplate

from mrtrweb.calls.models import Call
from mrtrweb.elicitation import field_name_for

# RFC 6570 section 2: expressions, variable names and modifiers (level 4).
_EXPRESSION = re.compile(r"\{([^{}]*)\}")
_VARCHAR = r"(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})"
_VARSPEC = re.compile(rf"({_VARCHAR}(?:\.?{_VARCHAR})*)(?::([1-9][0-9]{{0,3}})|\*)?")
_OPERATORS = "+#./;?&"
_RESERVED_OPERATORS = "=,!@|"  # reserved by the RFC for future extensions: an error today
# What ``{+var}`` and ``{#var}`` keep as it is: unreserved and reserved characters, and "%"
# only where it starts a pct-encoded triplet (stray ones are encoded first).
_KEPT = ":/?#[]@!$&'()*+,;=%"
_STRAY_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")


class MalformedTemplate(ValueError):
    """The template does not follow RFC 6570's grammar."""


def check(template: str) -> None:
    """Raise ``MalformedTemplate`` unless every expression of ``template`` is well formed."""
    if "{" in _EXPRESSION.sub("", template) or "}" in _EXPRESSION.sub("", template):
        raise MalformedTemplate("a brace is not closed or not opened")
    for match in _EXPRESSION.finditer(template):
        body = match.group(1)
        if body[:1] in _RESERVED_OPERATORS and body:
            raise MalformedTemplate(f"{match.group(0)} uses the reserved operator {body[0]}")
        names = body[1:] if body[:1] in _OPERATORS and body else body
        for varspec in names.split(","):
            if not _VARSPEC.fullmatch(varspec):
                raise MalformedTemplate(f"{match.group(0)} is not a valid expression")


def template_variables(template: str) -> list[str]:
    """The variable names of a well-formed template, in order, each once."""
    check(template)
    return list(URITemplate(template).variable_names)


def expand_uri_template(template: str, values: Mapping[str, str]) -> str:
    """The URI of a well-formed template with string values (levels 1-4)."""
    check(template)
    return _EXPRESSION.sub(lambda match: _expand(match.group(1), values), template)


def _expand(body: str, values: Mapping[str, str]) -> str:
    if body[:1] not in ("+", "#"):
        variables: dict[str, Any] = dict(values)
        return URITemplate("{" + body + "}").expand(variables)
    # Prefixes apply to the value, before encoding, so they are applied here and dropped.
    given: dict[str, Any] = {}
    names = []
    for varspec in body[1:].split(","):
        matched = _VARSPEC.fullmatch(varspec)
        assert matched is not None  # check() saw to it
        name, prefix = matched.group(1), matched.group(2)
        names.append(name)
        if name in values:
            value = values[name][: int(prefix)] if prefix else values[name]
            given[name] = quote(_STRAY_PERCENT.sub("%25", value), safe=_KEPT)
    return URITemplate("{" + body[0] + ",".join(names) + "}").expand(given)


class TemplateForm(forms.Form):
    """One required text field per variable of a resource template.

    A malformed template has no fields and never validates; ``malformed`` says why.
    """

    required_css_class = "required"
    error_css_class = "error"

    def __init__(self, template: str, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("prefix", "var")
        super().__init__(*args, **kwargs)
        self.template = template
        try:
            self.variables = template_variables(template)
        except MalformedTemplate as exc:
            self.variables, self.malformed = [], str(exc)
        else:
            self.malformed = ""
        for name in self.variables:
            self.fields[field_name_for(name)] = forms.CharField(label=name)

    def clean(self) -> dict[str, Any] | None:
        if self.malformed:
            raise forms.ValidationError(
                f"This resource template is malformed ({self.malformed}), so it cannot be read."
            )
        cleaned = super().clean()
        longest = Call._meta.get_field("target").max_length or 0
        filled = all(field_name_for(name) in self.cleaned_data for name in self.variables)
        if filled and len(self.uri()) > longest:
            # The call keeps its URI as its target: a longer one could not be stored.
            raise forms.ValidationError(
                f"These values make a URI longer than {longest} characters, so it cannot be read."
            )
        return cleaned

    def uri(self) -> str:
        values = {name: self.cleaned_data[field_name_for(name)] for name in self.variables}
        return expand_uri_template(self.template, values)
