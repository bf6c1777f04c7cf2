"""A Django form for one ``elicitation/create`` request, and typed content out of it."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

import mcp_types
from django import forms
from django.utils import timezone

from mrtrweb.elicitation.content import Content
from mrtrweb.elicitation.fields import initial_for, make_field
from mrtrweb.elicitation.schema import FormSpec, Kind, classify
from mrtrweb.elicitation.values import value_problem


class ElicitationForm(forms.Form):
    """Fields are named ``field_name_for(prop)``; ``cleaned_data`` holds wire values.

    Use ``content_from`` rather than ``cleaned_data``: it leaves out unanswered fields.
    """

    required_css_class = "required"
    error_css_class = "error"
    # Labels without a colon, checkboxes before theirs, limits in words (core's template).
    template_name = "mrtrweb/form.html"
    label_suffix = ""

    def __init__(
        self,
        spec: FormSpec,
        *,
        prefix: str,
        data: Mapping[str, Any] | None = None,
        initial: Mapping[str, Any] | None = None,
        tz: dt.tzinfo | None = None,
    ) -> None:
        super().__init__(data=data, initial=dict(initial or {}), prefix=prefix)
        self.spec = spec
        self.tz = tz or timezone.get_current_timezone()
        for field_spec in spec:
            self.fields[field_spec.field_name] = make_field(field_spec, tz=self.tz)


def build_form(
    schema: Mapping[str, Any] | FormSpec,
    *,
    prefix: str,
    data: Mapping[str, Any] | None = None,
    initial: Mapping[str, Any] | None = None,
    tz: dt.tzinfo | None = None,
) -> ElicitationForm:
    """The form for ``schema`` (a ``requestedSchema`` or an already classified ``FormSpec``).

    ``prefix`` should come from ``prefix_for_key(key)``. ``initial`` is form initial data as
    ``initial_from_content`` makes it (keyed by field name) and wins over schema defaults.
    ``tz`` is the zone a ``date-time`` typed without an offset is read in (default: Django's
    current time zone). Raises ``UnsupportedSchema`` for a schema outside the vocabulary.
    """
    spec = schema if isinstance(schema, FormSpec) else classify(schema)
    return ElicitationForm(spec, prefix=prefix, data=data, initial=initial, tz=tz)


def content_from(form: ElicitationForm) -> Content:
    """The ``ElicitResult.content`` for a bound, valid form, in schema property order.

    Booleans are always present (an unchecked box is ``false``); a required multi-select
    with nothing ticked is ``[]``; any other field left empty is omitted.
    """
    if not form.is_bound:
        raise ValueError("the form is not bound to submitted data")
    if not form.is_valid():
        raise ValueError("the form is not valid")
    content: Content = {}
    for spec in form.spec:
        value = form.cleaned_data.get(spec.field_name)
        if value is None:
            if spec.required:  # pragma: no cover - the fields refuse this
                raise AssertionError(f"required property {spec.prop!r} has no value")
            continue
        # The fields already checked this; checking again keeps a bug in one of them from
        # ever sending something the schema forbids.
        problem = value_problem(spec, value)
        if problem is not None:  # pragma: no cover
            raise AssertionError(f"property {spec.prop!r}: {problem}")
        content[spec.prop] = value
    return content


def accept_result(form: ElicitationForm) -> mcp_types.ElicitResult:
    """``ElicitResult(action="accept", content=content_from(form))``."""
    return mcp_types.ElicitResult(action="accept", content=dict(content_from(form)))


def initial_from_content(
    schema: Mapping[str, Any] | FormSpec, content: Mapping[str, Any]
) -> dict[str, Any]:
    """Form initial data (for ``build_form(initial=...)``) from saved ``content``.

    A property missing from ``content`` was left empty on purpose, so its field starts
    empty rather than showing the schema default again. A value that no longer answers the
    schema (a choice that is gone, a number out of range) is skipped, so the default shows.
    """
    spec = schema if isinstance(schema, FormSpec) else classify(schema)
    initial: dict[str, Any] = {}
    for field_spec in spec:
        if field_spec.prop not in content:
            initial[field_spec.field_name] = [] if field_spec.kind is Kind.MULTI_SELECT else None
            continue
        value = content[field_spec.prop]
        if value_problem(field_spec, value) is not None:
            continue
        initial[field_spec.field_name] = initial_for(field_spec, value)
    return initial
