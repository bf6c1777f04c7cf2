"""The arguments form of a tool: one typed field per flat argument, or the JSON editor.

A tool's ``inputSchema`` is full JSON Schema, not the flat elicitation vocabulary, so it gets
a lenient mapping of its own: a schema whose properties are all strings, numbers, integers,
booleans or scalar enums (each possibly nullable) becomes one field per property; anything
else (objects, arrays, ``$ref``, unions) is edited as JSON. The server validates the
arguments in any case; these forms only spare the person a round trip and type the values.

Field names are ``field_name_for(name)``: argument names are server strings.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django import forms
from django.utils.html import escape, format_html
from django.utils.safestring import mark_safe
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from mrtrweb.elicitation import field_name_for, hints
from mrtrweb.elicitation.schema import MAX_FIELDS, MAX_OPTIONS

MISSING: Any = object()
SCALAR_TYPES = ("string", "integer", "number", "boolean")
# Keywords that make a property more than a scalar we can offer as one field.
_STRUCTURAL = ("$ref", "allOf", "not", "if", "then", "else", "properties", "items", "const")


class NotFlat(ValueError):
    """The schema needs the JSON editor."""


@dataclass(frozen=True)
class ArgumentSpec:
    name: str
    kind: str  # one of SCALAR_TYPES, or "enum"
    required: bool
    nullable: bool = False
    title: str | None = None
    description: str | None = None
    default: Any = MISSING
    choices: tuple[Any, ...] = ()
    format: str | None = None
    minimum: float | None = None
    maximum: float | None = None
    min_length: int | None = None
    max_length: int | None = None

    @property
    def field_name(self) -> str:
        return field_name_for(self.name)

    @property
    def label(self) -> str:
        """The title, else the name made readable ("max_retries" is "Max retries")."""
        if self.title and self.title.strip():
            return self.title
        return humanise(self.name) or gettext("Argument")

    @property
    def key_hint(self) -> str:
        """The argument's own name, when the label is not it (for those who know the tool)."""
        return self.name if self.name and self.name != self.label else ""


def humanise(name: str) -> str:
    """``max_retries``, ``maxRetries``, ``max-retries`` -> "Max retries"."""
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name)
    words = re.sub(r"[_\-.\s]+", " ", words).strip()
    if not words:
        return ""
    words = words.lower() if not words.isupper() else words
    return words[0].upper() + words[1:]


def flat_arguments(schema: Any) -> tuple[ArgumentSpec, ...]:
    """The fields for a flat ``inputSchema``; raises ``NotFlat`` for anything else."""
    if schema is None:
        return ()
    if not isinstance(schema, Mapping):
        raise NotFlat("the input schema is not an object schema")
    if schema.get("type", "object") != "object":
        raise NotFlat("the input schema does not describe an object")
    for keyword in ("$ref", "allOf", "anyOf", "oneOf", "not", "if", "patternProperties"):
        if keyword in schema:
            raise NotFlat(f"the input schema uses {keyword}")
    properties = schema.get("properties") or {}
    required = schema.get("required") or []
    if not isinstance(properties, Mapping) or not isinstance(required, list):
        raise NotFlat("the input schema's properties are malformed")
    if len(properties) > MAX_FIELDS:
        raise NotFlat(f"the input schema has {len(properties)} properties, too many for fields")
    return tuple(_argument(name, prop, name in required) for name, prop in properties.items())


def _argument(name: str, prop: Any, required: bool) -> ArgumentSpec:
    if not isinstance(prop, Mapping):
        raise NotFlat(f"property {name!r} is not a schema")
    prop, nullable = _unwrap_nullable(name, prop)
    if any(keyword in prop for keyword in _STRUCTURAL):
        raise NotFlat(f"property {name!r} is structured")
    common: dict[str, Any] = {
        "name": name,
        "required": required,
        "nullable": nullable,
        "title": text_or_none(prop.get("title")),
        "description": text_or_none(prop.get("description")),
        "default": prop.get("default", MISSING),
    }
    if "enum" in prop:
        values = prop["enum"]
        if not isinstance(values, list) or not values:
            raise NotFlat(f"property {name!r} has a malformed enum")
        if any(isinstance(v, dict | list) for v in values):
            raise NotFlat(f"property {name!r} has structured enum values")
        if len(values) > MAX_OPTIONS:
            # As many choices as a round's form may show (elicitation.schema says why).
            raise NotFlat(f"property {name!r} has {len(values)} choices, too many for a field")
        choices = tuple(v for v in values if v is not None)
        return ArgumentSpec(
            kind="enum", choices=choices, **{**common, "nullable": nullable or None in values}
        )
    kind = prop.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        if len(kinds) != 1:
            raise NotFlat(f"property {name!r} has several types")
        common["nullable"] = nullable or "null" in kind
        kind = kinds[0]
    if kind not in SCALAR_TYPES:
        raise NotFlat(f"property {name!r} is of type {kind!r}")
    return ArgumentSpec(
        kind=kind,
        format=text_or_none(prop.get("format")),
        minimum=_number_or_none(prop.get("minimum")),
        maximum=_number_or_none(prop.get("maximum")),
        min_length=_count_or_none(prop.get("minLength")),
        max_length=_count_or_none(prop.get("maxLength")),
        **common,
    )


def _unwrap_nullable(name: str, prop: Mapping[str, Any]) -> tuple[Mapping[str, Any], bool]:
    """``anyOf: [X, {"type": "null"}]`` (how pydantic writes ``X | None``) is X, nullable."""
    for keyword in ("anyOf", "oneOf"):
        if keyword not in prop:
            continue
        options = prop[keyword]
        if not isinstance(options, list):
            raise NotFlat(f"property {name!r} has a malformed {keyword}")
        others = [o for o in options if o != {"type": "null"}]
        if len(others) != 1 or len(others) == len(options) or not isinstance(others[0], Mapping):
            raise NotFlat(f"property {name!r} is a union")
        outer = {k: v for k, v in prop.items() if k != keyword}
        return {**others[0], **outer}, True
    return prop, False


def text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _number_or_none(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value if math.isfinite(value) else None


def _count_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


class ArgumentsForm(forms.Form):
    """One field per flat argument; ``arguments()`` is the typed JSON object to send."""

    required_css_class = "required"
    error_css_class = "error"
    # The round forms' template (mrtrweb/core/templates/mrtrweb/form.html).
    template_name = "mrtrweb/form.html"
    label_suffix = ""

    def __init__(self, specs: Sequence[ArgumentSpec], *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("prefix", "arg")
        super().__init__(*args, **kwargs)
        self.specs = tuple(specs)
        for spec in self.specs:
            self.fields[spec.field_name] = _field_for(spec)

    def arguments(self) -> dict[str, Any]:
        """The arguments object; fields left empty are left out (the server's default holds)."""
        arguments: dict[str, Any] = {}
        for spec in self.specs:
            value = self.cleaned_data.get(spec.field_name)
            if value is None or value == "":
                if spec.required and spec.nullable:
                    arguments[spec.name] = None
                continue
            arguments[spec.name] = value
        return arguments


def _field_for(spec: ArgumentSpec) -> forms.Field:
    field = _plain_field_for(spec)
    # Limits in words before submitting (the attributes let the browser help too), and the
    # argument's own name for those who know the tool. Server text: escaped by format_html.
    hint = _limits_hint(spec)
    parts = [field.help_text]
    if hint:
        parts.append(format_html('<span class="hint">{}</span>', hint))
    if spec.key_hint:
        parts.append(
            format_html(
                '<span class="hint">{} <code>{}</code></span>', gettext("Argument:"), spec.key_hint
            )
        )
    field.help_text = mark_safe(" ".join(str(part) for part in parts if part))
    return field


def _limits_hint(spec: ArgumentSpec) -> str:
    if spec.kind == "string":
        return hints.join(
            hints.length_hint(spec.min_length, spec.max_length), hints.format_hint(spec.format)
        )
    if spec.kind in ("integer", "number"):
        return hints.join(
            hints.number_hint(spec.minimum, spec.maximum, integer=spec.kind == "integer")
        )
    return ""


def _plain_field_for(spec: ArgumentSpec) -> forms.Field:
    common: dict[str, Any] = {
        "label": spec.label,
        "required": spec.required and not spec.nullable,
        # Django renders help text unescaped; a description is server text.
        "help_text": escape(spec.description) if spec.description else "",
    }
    default = None if spec.default is MISSING else spec.default
    field: forms.Field
    if spec.kind == "enum":
        choices = [(str(i), _choice_label(v)) for i, v in enumerate(spec.choices)]
        blank = "Choose…" if common["required"] else "(not set)"
        field = forms.TypedChoiceField(
            choices=[("", blank), *choices],
            coerce=lambda index: spec.choices[int(index)],
            empty_value=None,
            **common,
        )
        if default in spec.choices:
            field.initial = str(spec.choices.index(default))
        return field
    if spec.kind == "boolean":
        if spec.required or isinstance(default, bool):
            # A checkbox always answers: unticked is false.
            field = forms.BooleanField(**{**common, "required": False})
        else:
            field = forms.NullBooleanField(
                widget=forms.Select(
                    choices=[("unknown", "(not set)"), ("true", "Yes"), ("false", "No")]
                ),
                **{**common, "required": False},
            )
        field.initial = default if isinstance(default, bool) else None
        return field
    if spec.kind == "integer":
        field = forms.IntegerField(
            min_value=_int_bound(spec.minimum, math.ceil),
            max_value=_int_bound(spec.maximum, math.floor),
            **common,
        )
        field.widget.attrs["step"] = "1"
        if isinstance(default, int) and not isinstance(default, bool):
            field.initial = default
        return field
    if spec.kind == "number":
        field = _NumberField(min_value=spec.minimum, max_value=spec.maximum, **common)
        field.widget.attrs["step"] = "any"
        if isinstance(default, int | float) and not isinstance(default, bool):
            field.initial = default
        return field
    widget: forms.Widget
    if spec.format == "email":
        widget = forms.EmailInput()
    elif spec.format == "uri":
        widget = forms.URLInput()
    elif spec.format == "date":
        widget = forms.DateInput(attrs={"type": "date"})
    elif spec.max_length is not None and spec.max_length > 200:
        widget = forms.Textarea(attrs={"rows": 4})
    else:
        widget = forms.TextInput()
    field = forms.CharField(
        min_length=spec.min_length, max_length=spec.max_length, widget=widget, **common
    )
    if isinstance(default, str):
        field.initial = default
    return field


def _choice_label(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _int_bound(bound: float | None, rounding: Any) -> int | None:
    return None if bound is None else int(rounding(bound))


class _NumberField(forms.FloatField):
    """A JSON number: integral input stays an integer (``3``, not ``3.0``)."""

    def to_python(self, value: Any) -> Any:
        number = super().to_python(value)
        if isinstance(number, float) and number.is_integer() and abs(number) <= 2**53:
            return int(number)
        return number


class JsonArgumentsForm(forms.Form):
    """The JSON editor: any JSON object, sent exactly as typed."""

    arguments = forms.CharField(
        label=_("Arguments (a JSON object)"),
        widget=forms.Textarea(attrs={"rows": 12, "spellcheck": "false", "class": "code"}),
        initial="{}",
        strip=False,
    )

    def clean_arguments(self) -> str:
        text: str = self.cleaned_data["arguments"]
        try:
            value = json.loads(text, parse_constant=_refuse_constant)
        except ValueError as exc:
            raise forms.ValidationError(f"This is not valid JSON: {exc}") from None
        if not isinstance(value, dict):
            raise forms.ValidationError(_("The arguments must be a JSON object ({…})."))
        where = _not_finite_at(value)
        if where is not None:
            # 1e999 reads as infinity: the text would go out as typed, but no server reads it
            # back as that number. Worded as the parser's own errors above are.
            raise forms.ValidationError(
                f"The number at {where} is too large: numbers must be finite."
            )
        return text


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _not_finite_at(value: Any) -> str | None:
    """The JSON pointer to the first number in ``value`` that is not finite, if any."""
    stack: list[tuple[Any, tuple[str, ...]]] = [(value, ())]
    while stack:
        item, where = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return "".join("/" + part.replace("~", "~0").replace("/", "~1") for part in where)
        if isinstance(item, dict):
            stack.extend((child, (*where, str(key))) for key, child in item.items())
        elif isinstance(item, list):
            stack.extend((child, (*where, str(i))) for i, child in enumerate(item))
    return None
