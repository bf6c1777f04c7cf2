"""Whether a wire value answers a field spec: the one place the constraints are judged.

The form fields parse what a person typed into a wire value and then ask ``value_problem``;
``content_from`` asks again before anything leaves, and saved answers are re-checked with it
before they pre-fill a form.
"""

from __future__ import annotations

import math
from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop, ngettext

from mrtrweb.elicitation.formats import FORMAT_CHECKS
from mrtrweb.elicitation.schema import FieldSpec, Kind

# Marked here, translated where returned.
FORMAT_PROBLEMS = {
    "email": gettext_noop("Enter a valid email address."),
    "uri": gettext_noop("Enter a full address including its scheme, such as https://example.com/."),
    "date": gettext_noop("Enter a valid date (YYYY-MM-DD)."),
    "date-time": gettext_noop("Enter a valid date and time."),
}


def value_problem(spec: FieldSpec, value: Any) -> str | None:
    """Why ``value`` is not an acceptable wire value for ``spec``, or None when it is."""
    if spec.kind is Kind.BOOLEAN:
        return None if isinstance(value, bool) else _("Expected true or false.")
    if spec.kind in (Kind.INTEGER, Kind.NUMBER):
        return _number_problem(spec, value)
    if spec.kind is Kind.STRING:
        return _string_problem(spec, value)
    if spec.kind is Kind.SINGLE_SELECT:
        if not isinstance(value, str) or value not in spec.option_values():
            return _("Select one of the available choices.")
        return None
    if spec.kind is Kind.MULTI_SELECT:
        return _multi_problem(spec, value)
    raise AssertionError(f"unknown kind {spec.kind!r}")


def _number_problem(spec: FieldSpec, value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return _("Enter a number.")
    if isinstance(value, float) and not math.isfinite(value):
        return _("Enter a number.")
    if spec.kind is Kind.INTEGER and not isinstance(value, int):
        return _("Enter a whole number.")
    if spec.minimum is not None and value < spec.minimum:
        return _("Enter a number greater than or equal to %(minimum)s.") % {"minimum": spec.minimum}
    if spec.maximum is not None and value > spec.maximum:
        return _("Enter a number less than or equal to %(maximum)s.") % {"maximum": spec.maximum}
    return None


def _string_problem(spec: FieldSpec, value: Any) -> str | None:
    if not isinstance(value, str):
        return _("Enter text.")
    # JSON Schema lengths count code points, which is what len() of a str counts.
    if spec.min_length is not None and len(value) < spec.min_length:
        return ngettext(
            "Enter at least %(limit)d character (you entered %(count)d).",
            "Enter at least %(limit)d characters (you entered %(count)d).",
            spec.min_length,
        ) % {"limit": spec.min_length, "count": len(value)}
    if spec.max_length is not None and len(value) > spec.max_length:
        return ngettext(
            "Enter at most %(limit)d character (you entered %(count)d).",
            "Enter at most %(limit)d characters (you entered %(count)d).",
            spec.max_length,
        ) % {"limit": spec.max_length, "count": len(value)}
    if spec.format is not None and not FORMAT_CHECKS[spec.format](value):
        return _(FORMAT_PROBLEMS[spec.format])
    return None


def _multi_problem(spec: FieldSpec, value: Any) -> str | None:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        return _("Select from the available choices.")
    allowed = spec.option_values()
    if any(item not in allowed for item in value):
        return _("Select from the available choices.")
    if len(set(value)) != len(value):
        return _("Select each choice at most once.")
    if spec.min_items is not None and len(value) < spec.min_items:
        return _("Select at least %(limit)d.") % {"limit": spec.min_items}
    if spec.max_items is not None and len(value) > spec.max_items:
        return _("Select at most %(limit)d.") % {"limit": spec.max_items}
    return None
