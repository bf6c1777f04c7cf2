"""Django form fields whose cleaned value is the wire value itself.

Each field parses what a person typed (or what a browser sent) into a JSON value, ``None``
standing for "no answer", and then hands it to ``clean_value``, the step the JSON API takes
too: it trims, normalises and judges the value against the spec. So ``cleaned_data`` is
already typed content, a value the schema refuses can never come out of a valid form, and the
page and the API accept the same answers.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from decimal import Decimal, InvalidOperation
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.utils.html import escape, format_html
from django.utils.translation import gettext as _

from mrtrweb.elicitation.content import MAX_NUMBER_CHARS, AnswerProblem, clean_value, rfc3339
from mrtrweb.elicitation.hints import choices_hint, format_hint, join, length_hint, number_hint
from mrtrweb.elicitation.schema import FieldSpec, Kind

RADIO_MAX_OPTIONS = 5
TEXTAREA_MIN_MAX_LENGTH = 200  # a maxLength above this suggests prose, not a single line

# Number input as browsers submit it (ASCII digits only: ``\d`` would admit Arabic-Indic
# digits that Decimal happily parses).
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_SAFE_INTEGER = 2**53  # larger integral numbers stay floats, as JSON readers would read them


class WireField(forms.Field):
    """A field for one ``FieldSpec``; ``clean`` returns the wire value or None."""

    def __init__(self, spec: FieldSpec, **kwargs: Any) -> None:
        self.spec = spec
        super().__init__(**kwargs)

    def to_wire(self, value: Any) -> Any:
        """Parse submitted data into a JSON value; None means the person gave no answer."""
        raise NotImplementedError

    def clean(self, value: Any) -> Any:
        # The same final step as the API's: what is sent cannot depend on where it came from.
        try:
            return clean_value(self.spec, self.to_wire(value))
        except AnswerProblem as exc:
            raise ValidationError(exc.message, code=exc.code) from None


def _text(value: Any) -> str | None:
    """Submitted text, stripped; None for nothing at all."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValidationError(_("Enter text."), code="invalid")
    # NUL is legal in JSON but PostgreSQL refuses it in text and jsonb, where answers are kept.
    if "\x00" in value:
        raise ValidationError(_("Null characters are not allowed."), code="null_characters")
    value = value.strip()
    return value or None


class TextField(WireField):
    """Plain, email and uri strings."""

    def to_wire(self, value: Any) -> Any:
        return value  # clean_value trims it


class DateField(WireField):
    """``format: date``; the value is the ``YYYY-MM-DD`` text an ``<input type=date>`` sends."""

    def to_wire(self, value: Any) -> Any:
        return value  # clean_value trims it

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
            return value.isoformat()
        return value


class DateTimeField(WireField):
    """``format: date-time``, entered with ``<input type=datetime-local>``.

    That input has no time zone, while RFC 3339 (which JSON Schema's ``date-time`` means)
    requires an offset. A time without an offset is read as wall-clock time in ``tz`` (the
    person's zone, Django's current time zone by default) and sent with that zone's offset,
    e.g. ``2026-08-01T09:30:00+02:00``: valid RFC 3339 and still the instant the person
    meant. Appending ``Z`` instead would silently shift it by their UTC offset. A time typed
    with an offset keeps it. Seconds are always sent, fractions of a second never.
    """

    def __init__(self, spec: FieldSpec, *, tz: dt.tzinfo, **kwargs: Any) -> None:
        self.tz = tz
        super().__init__(spec, **kwargs)

    def to_wire(self, value: Any) -> str | None:
        text = _text(value)
        if text is None:
            return None
        return rfc3339(self._parse(text))

    def _parse(self, text: str) -> dt.datetime:
        invalid = ValidationError(_("Enter a valid date and time."), code="invalid")
        try:
            moment = dt.datetime.fromisoformat(text)
        except ValueError:
            raise invalid from None
        if moment.tzinfo is not None:
            return moment
        local = moment.replace(tzinfo=self.tz)
        try:
            back = local.astimezone(dt.UTC).astimezone(self.tz).replace(tzinfo=None)
        except (OverflowError, ValueError):
            raise invalid from None
        if back != moment:
            # Skipped by a clock change (spring forward). An hour repeated by the change in
            # autumn is read as its first occurrence.
            raise ValidationError(
                _("This time does not exist in %(zone)s: the clocks change then."),
                code="nonexistent",
                params={"zone": _zone_name(self.tz)},
            )
        return local

    def prepare_value(self, value: Any) -> Any:
        """Show saved or default values as local wall-clock time for datetime-local."""
        moment = value if isinstance(value, dt.datetime) else None
        if isinstance(value, str):
            try:
                moment = dt.datetime.fromisoformat(value.strip())
            except ValueError:
                return value
        if moment is None:
            return value
        if moment.tzinfo is not None:
            try:
                moment = moment.astimezone(self.tz)
            except (OverflowError, ValueError):
                return value
        # isoformat, not strftime: strftime writes the year 13 as "13", not the "0013" that
        # datetime-local needs, so an early date would show empty.
        return moment.replace(tzinfo=None, microsecond=0).isoformat(timespec="seconds")


class NumberField(WireField):
    """``type: number`` or ``integer``; integral input becomes a JSON integer."""

    def to_wire(self, value: Any) -> Decimal | None:
        """The typed number, read exactly; clean_value decides what is sent for it."""
        text = _text(value)
        if text is None:
            return None
        if len(text) > MAX_NUMBER_CHARS:
            raise ValidationError(_("Enter a shorter number."), code="invalid")
        if not _NUMBER.fullmatch(text):
            raise ValidationError(
                _("Enter a whole number.")
                if self.spec.kind is Kind.INTEGER
                else _("Enter a number."),
                code="invalid",
            )
        try:
            return Decimal(text)
        except InvalidOperation:  # pragma: no cover - the pattern admits only Decimal syntax
            raise ValidationError(_("Enter a number."), code="invalid") from None

    def prepare_value(self, value: Any) -> Any:
        # A str keeps Django from localising the number (``1,5`` is not a number input value).
        if isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer() and abs(value) <= _SAFE_INTEGER:
            return str(int(value))
        if isinstance(value, int | float):
            return repr(value)
        return value


class BooleanField(WireField):
    """A checkbox. Unchecked is an answer (false), so a required boolean accepts it."""

    widget = forms.CheckboxInput

    def to_wire(self, value: Any) -> bool:
        if isinstance(value, str):
            return value.strip().lower() not in ("", "false", "0", "off")
        return bool(value)


class SingleChoiceField(WireField):
    """One option; the HTML values are option indices, so any server string (even ``""``)
    survives and the empty value can only mean "no answer"."""

    def to_wire(self, value: Any) -> str | None:
        if value is None or value == "":
            return None
        index = option_index(self.spec, value)
        if index is None:
            raise ValidationError(_("Select a valid choice."), code="invalid_choice")
        return self.spec.options[index].value


class MultiChoiceField(WireField):
    """Checkboxes. A required multi-select only needs its key present: nothing ticked is
    sent as ``[]`` (unless ``minItems`` asks for more), like an unchecked required boolean.
    An optional one with nothing ticked is left out."""

    def to_wire(self, value: Any) -> list[str]:
        """The ticked options' values; clean_value orders them and drops repeats."""
        if value is None or value == "":
            value = []
        if not isinstance(value, list | tuple):
            value = [value]
        chosen = []
        for item in value:
            index = option_index(self.spec, item)
            if index is None:
                raise ValidationError(_("Select a valid choice."), code="invalid_choice")
            chosen.append(self.spec.options[index].value)
        return chosen


def option_index(spec: FieldSpec, value: Any) -> int | None:
    """The index of the option a page posted (ASCII digits only, as the page writes them)."""
    if not isinstance(value, str) or not value.isdigit() or not value.isascii():
        return None
    index = int(value)
    return index if index < len(spec.options) else None


def control_for(spec: FieldSpec) -> str:
    """The HTML control used for ``spec``."""
    if spec.kind is Kind.STRING:
        if spec.format is not None:
            return {"email": "email", "uri": "url", "date": "date", "date-time": "datetime-local"}[
                spec.format
            ]
        if spec.max_length is not None and spec.max_length > TEXTAREA_MIN_MAX_LENGTH:
            return "textarea"
        return "text"
    if spec.kind in (Kind.NUMBER, Kind.INTEGER):
        return "number"
    if spec.kind is Kind.BOOLEAN:
        return "checkbox"
    if spec.kind is Kind.SINGLE_SELECT:
        return "radio" if len(spec.options) <= RADIO_MAX_OPTIONS else "select"
    return "checkboxes"


def make_field(spec: FieldSpec, *, tz: dt.tzinfo) -> WireField:
    """The Django field for ``spec``, with its default (if the field accepts it) as initial."""
    help_text = escape(spec.description) if spec.description else ""
    control = control_for(spec)
    common: dict[str, Any] = {"label": spec.label, "required": spec.required}
    field: WireField
    if control in ("text", "textarea", "email", "url"):
        attrs = _length_attrs(spec)
        widget = {
            "text": forms.TextInput,
            "textarea": forms.Textarea,
            "email": forms.EmailInput,
            "url": forms.URLInput,
        }[control](attrs=attrs)
        field = TextField(spec, widget=widget, **common)
    elif control == "date":
        widget = forms.DateInput(attrs={"type": "date", **_length_attrs(spec)})
        field = DateField(spec, widget=widget, **common)
    elif control == "datetime-local":
        # step=1 so a default or saved answer with seconds is not a browser step mismatch.
        widget = forms.DateTimeInput(attrs={"type": "datetime-local", "step": "1"})
        zone = format_html("Time zone: {}.", _zone_name(tz))
        help_text = format_html("{} {}", help_text, zone) if help_text else zone
        field = DateTimeField(spec, tz=tz, widget=widget, **common)
    elif control == "number":
        field = NumberField(spec, widget=forms.NumberInput(attrs=_number_attrs(spec)), **common)
    elif control == "checkbox":
        common["required"] = False
        field = BooleanField(spec, **common)
    elif control in ("radio", "select"):
        choices = [(str(i), option.label) for i, option in enumerate(spec.options)]
        if control == "select":
            blank = "Choose…" if spec.required else "(no answer)"
            field = SingleChoiceField(
                spec, widget=forms.Select(choices=[("", blank), *choices]), **common
            )
        else:
            if not spec.required:
                # A radio group cannot be emptied once clicked; give "no answer" a button.
                choices = [*choices, ("", "No answer")]
            field = SingleChoiceField(spec, widget=forms.RadioSelect(choices=choices), **common)
    else:
        common["required"] = False
        choices = [(str(i), option.label) for i, option in enumerate(spec.options)]
        field = MultiChoiceField(
            spec, widget=forms.CheckboxSelectMultiple(choices=choices), **common
        )
    hint = limits_hint(spec)
    if hint:
        # The limits, said before submitting (the browser enforces what the attributes say).
        help_text = format_html('{} <span class="hint">{}</span>', help_text, hint)
    field.help_text = help_text
    field.initial = checked_initial(field, spec.default)
    return field


def limits_hint(spec: FieldSpec) -> str:
    """The field's limits in words ("Between 3 and 200 characters."), or ""."""
    if spec.kind is Kind.STRING:
        return join(length_hint(spec.min_length, spec.max_length), format_hint(spec.format))
    if spec.kind in (Kind.NUMBER, Kind.INTEGER):
        return join(number_hint(spec.minimum, spec.maximum, integer=spec.kind is Kind.INTEGER))
    if spec.kind is Kind.MULTI_SELECT:
        return join(choices_hint(spec.min_items, spec.max_items))
    return ""


def initial_for(spec: FieldSpec, value: Any) -> Any:
    """Widget initial data for the wire value ``value`` (None if it cannot be shown)."""
    if value is None:
        return None
    if spec.kind is Kind.SINGLE_SELECT:
        values = spec.option_values()
        return str(values.index(value)) if value in values else None
    if spec.kind is Kind.MULTI_SELECT:
        if not isinstance(value, list):
            return None
        values = spec.option_values()
        if any(item not in values for item in value):
            return None
        return [str(values.index(item)) for item in value]
    return value


def checked_initial(field: WireField, value: Any) -> Any:
    """``value`` as initial data, or None when the field would refuse it if submitted.

    A server's default that breaks its own constraints is a server bug; pre-filling it
    would only greet the person with an error, so it is dropped instead.
    """
    initial = initial_for(field.spec, value)
    if initial is None:
        return None
    try:
        field.clean(field.prepare_value(initial))
    except ValidationError:
        return None
    return initial


def _length_attrs(spec: FieldSpec) -> dict[str, str]:
    attrs = {}
    if spec.min_length is not None:
        attrs["minlength"] = str(spec.min_length)
    if spec.max_length is not None:
        attrs["maxlength"] = str(spec.max_length)
    return attrs


def _number_attrs(spec: FieldSpec) -> dict[str, str]:
    if spec.kind is Kind.INTEGER:
        # The step base of a number input is its min, so a fractional minimum would make
        # every integer a step mismatch; round the bounds inwards to integers.
        attrs = {"step": "1"}
        if spec.minimum is not None:
            attrs["min"] = str(math.ceil(spec.minimum))
        if spec.maximum is not None:
            attrs["max"] = str(math.floor(spec.maximum))
        return attrs
    attrs = {"step": "any"}
    if spec.minimum is not None:
        attrs["min"] = repr(spec.minimum)
    if spec.maximum is not None:
        attrs["max"] = repr(spec.maximum)
    return attrs


def _zone_name(tz: dt.tzinfo) -> str:
    return getattr(tz, "key", None) or tz.tzname(None) or str(tz)
