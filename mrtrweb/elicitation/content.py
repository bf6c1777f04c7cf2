"""Cleaning answers as JSON values: the one path from a value to ``ElicitResult.content``.

Two callers, one function: the form fields parse what a browser posted (text, ``"on"``,
option indexes) into a JSON value and finish with ``clean_value``; the JSON API hands its
values to ``clean_content`` directly. So the page and the API cannot disagree about an
answer: both trim text the same way, read numbers the same way (an integral number is sent
as an integer), order and de-duplicate multi-selects the same way, and judge every constraint
with ``value_problem``.

What only a form does is read typed input: a number's text, a date and time typed without
an offset (read in the person's zone). A JSON caller sends the value itself.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from mrtrweb.elicitation.schema import FieldSpec, FormSpec, Kind
from mrtrweb.elicitation.values import value_problem

Content = dict[str, str | int | float | bool | list[str]]

# Marked here, translated where raised (a lazy string is no str for the API's models).
REQUIRED = gettext_noop("This field is required.")
UNKNOWN_PROPERTY = gettext_noop("The question has no such field.")
# Beyond this many digits an integer is surely a typo, and Python refuses to print an int
# of more than 4300 digits, so the JSON encoder would crash on it later.
MAX_INTEGER_DIGITS = 300
MAX_NUMBER_CHARS = 400  # a number's text beyond this is junk (and spares Decimal a megabyte)
SAFE_INTEGER = 2**53  # larger integral numbers stay floats, as JSON readers would read them


class AnswerProblem(ValueError):
    """Why one value does not answer its field; ``code`` is the Django error code."""

    def __init__(self, message: str, code: str = "invalid") -> None:
        super().__init__(message)
        self.message = message
        self.code = code


@dataclass(frozen=True)
class ContentProblem:
    prop: str
    message: str


class InvalidContent(ValueError):
    """The problems of a whole ``content`` object, in property order (unknown ones first)."""

    def __init__(self, problems: list[ContentProblem]) -> None:
        super().__init__("; ".join(f"{p.prop!r}: {p.message}" for p in problems))
        self.problems = problems


def clean_value(spec: FieldSpec, value: Any) -> Any:
    """The wire value to send for ``value``, or None for "no answer".

    ``value`` is a JSON value (a form field passes what it parsed; a number may also come as
    a ``Decimal``). Raises :class:`AnswerProblem` when it does not answer ``spec``, including
    "no answer" to a required field.
    """
    wire = _normalised(spec, value)
    if wire is None:
        if spec.required:
            raise AnswerProblem(_(REQUIRED), code="required")
        return None
    problem = value_problem(spec, wire)
    if problem is not None:
        raise AnswerProblem(problem)
    return wire


def clean_content(spec: FormSpec, content: Mapping[str, Any]) -> Content:
    """The ``ElicitResult.content`` for the JSON object ``content``, in schema order.

    A property left out or ``null`` is no answer; raises :class:`InvalidContent` with every
    problem found (a property the schema does not have, a required one missing, a value that
    does not answer its field).
    """
    known = {field.prop for field in spec}
    problems = [ContentProblem(prop, _(UNKNOWN_PROPERTY)) for prop in content if prop not in known]
    cleaned: Content = {}
    for field in spec:
        try:
            value = clean_value(field, content.get(field.prop))
        except AnswerProblem as exc:
            problems.append(ContentProblem(field.prop, exc.message))
            continue
        if value is not None:
            cleaned[field.prop] = value
    if problems:
        raise InvalidContent(problems)
    return cleaned


def _normalised(spec: FieldSpec, value: Any) -> Any:
    if value is None:
        return None
    if spec.kind is Kind.STRING:
        return _string(spec, value)
    if spec.kind in (Kind.NUMBER, Kind.INTEGER):
        return _number(spec, value)
    if spec.kind is Kind.MULTI_SELECT:
        return _multi(spec, value)
    return value  # booleans and single choices are taken as they are


def _string(spec: FieldSpec, value: object) -> str | None:
    if not isinstance(value, str):
        raise AnswerProblem(_("Enter text."))
    # NUL is legal in JSON but PostgreSQL refuses it in text and jsonb, where answers are kept.
    if "\x00" in value:
        raise AnswerProblem(_("Null characters are not allowed."), code="null_characters")
    value = value.strip()
    if not value:
        return None
    if spec.format == "date-time" and value_problem(spec, value) is None:
        return rfc3339(_moment(value))
    return value


def _moment(value: str) -> dt.datetime:
    try:
        return dt.datetime.fromisoformat(value)
    except ValueError:
        # RFC 3339 allows a lower-case T and Z, which Python's reader does not.
        raise AnswerProblem(_("Enter a valid date and time.")) from None


def rfc3339(moment: dt.datetime) -> str:
    """``moment`` as the date-time we send: whole seconds, its offset kept when RFC 3339 can
    write it (historic offsets such as Paris's +00:09:21 become UTC)."""
    moment = moment.replace(microsecond=0)
    offset = moment.utcoffset()
    if offset is not None and offset.total_seconds() % 60:
        try:
            moment = moment.astimezone(dt.UTC)
        except (OverflowError, ValueError):
            raise AnswerProblem(_("Enter a valid date and time.")) from None
    return moment.isoformat(timespec="seconds")


def _number(spec: FieldSpec, value: Any) -> int | float:
    integer = spec.kind is Kind.INTEGER
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        raise AnswerProblem(_("Enter a number."))
    if isinstance(value, int) and (
        # bit_length first: str() of an int of more than 4300 digits raises.
        value.bit_length() > 4 * MAX_NUMBER_CHARS or len(str(value)) > MAX_NUMBER_CHARS
    ):
        raise AnswerProblem(_("Enter a shorter number."))
    if isinstance(value, float):
        if not math.isfinite(value):
            raise AnswerProblem(_("Enter a number."))
        # repr is the shortest text that reads back as this float: what a JSON reader saw.
        value = Decimal(repr(value))
    number = Decimal(value)
    if not number.is_finite():
        raise AnswerProblem(_("Enter a number."))
    if number.adjusted() >= MAX_INTEGER_DIGITS:
        raise AnswerProblem(_("Enter a smaller number."))
    integral = number == number.to_integral_value()
    if integer:
        if not integral:
            raise AnswerProblem(_("Enter a whole number."))
        return int(number)
    if integral and abs(number) <= SAFE_INTEGER:
        return int(number)
    return float(number)


def _multi(spec: FieldSpec, value: Any) -> list[str] | None:
    allowed = spec.option_values()
    if not isinstance(value, list | tuple) or any(
        not isinstance(item, str) or item not in allowed for item in value
    ):
        raise AnswerProblem(_("Select from the available choices."), code="invalid_choice")
    chosen = set(value)
    if not chosen and not spec.required:
        # Nothing ticked on an optional multi-select is no answer, not an empty one.
        return None
    return [option for option in allowed if option in chosen]
