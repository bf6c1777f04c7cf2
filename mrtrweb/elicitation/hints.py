"""Limits said in words before anyone submits: "Between 3 and 200 characters.", "A whole
number from 1 to 10.", "Choose 1 to 2.".

The round forms (``fields.make_field``) and the start form (``start_pages.tools``) show these under
a field, beside the HTML attributes (``minlength``, ``min``, ``step``, ...) that let the browser
help too; what the server and ``clean_value`` accept stays the authority. Numbers are a
server's: they are formatted, never trusted as markup (Django escapes the text).
"""

from __future__ import annotations

import math

from django.utils import formats
from django.utils.translation import gettext, ngettext


def _number(value: float) -> str:
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        value = int(value)
    return formats.number_format(value, use_l10n=True)


def length_hint(min_length: int | None, max_length: int | None) -> str | None:
    """Characters: at least, at most, or between."""
    if min_length is not None and max_length is not None:
        if min_length == max_length:
            return ngettext(
                "Exactly %(count)s character.", "Exactly %(count)s characters.", max_length
            ) % {"count": _number(max_length)}
        return gettext("Between %(min)s and %(max)s characters.") % {
            "min": _number(min_length),
            "max": _number(max_length),
        }
    if min_length is not None and min_length > 0:
        return ngettext(
            "At least %(count)s character.", "At least %(count)s characters.", min_length
        ) % {"count": _number(min_length)}
    if max_length is not None:
        return ngettext(
            "At most %(count)s character.", "At most %(count)s characters.", max_length
        ) % {"count": _number(max_length)}
    return None


def number_hint(minimum: float | None, maximum: float | None, *, integer: bool) -> str | None:
    """A (whole) number, with its range. Integer bounds are rounded inwards, as the field's
    ``min`` and ``max`` attributes are."""
    if integer:
        minimum = None if minimum is None else math.ceil(minimum)
        maximum = None if maximum is None else math.floor(maximum)
    low = None if minimum is None else _number(minimum)
    high = None if maximum is None else _number(maximum)
    if low is not None and high is not None:
        if integer:
            return gettext("A whole number from %(min)s to %(max)s.") % {"min": low, "max": high}
        return gettext("A number from %(min)s to %(max)s.") % {"min": low, "max": high}
    if low is not None:
        if integer:
            return gettext("A whole number, %(min)s or more.") % {"min": low}
        return gettext("A number, %(min)s or more.") % {"min": low}
    if high is not None:
        if integer:
            return gettext("A whole number, %(max)s or less.") % {"max": high}
        return gettext("A number, %(max)s or less.") % {"max": high}
    return gettext("A whole number.") if integer else None


def format_hint(format_: str | None) -> str | None:
    """What a string of this JSON Schema ``format`` looks like (date pickers need none)."""
    if format_ == "email":
        return gettext("An email address, such as name@example.org.")
    if format_ == "uri":
        return gettext("A web address, such as https://example.org/.")
    return None


def choices_hint(min_items: int | None, max_items: int | None) -> str | None:
    """How many boxes to tick."""
    low = min_items if min_items else None
    if low is not None and max_items is not None:
        if low == max_items:
            return ngettext("Choose %(count)s.", "Choose %(count)s.", low) % {"count": low}
        return gettext("Choose %(min)s to %(max)s.") % {"min": low, "max": max_items}
    if low is not None:
        return ngettext("Choose at least %(count)s.", "Choose at least %(count)s.", low) % {
            "count": low
        }
    if max_items is not None:
        return ngettext("Choose at most %(count)s.", "Choose at most %(count)s.", max_items) % {
            "count": max_items
        }
    return None


def join(*hints: str | None) -> str:
    """The hints given, as one line."""
    return " ".join(hint for hint in hints if hint)
