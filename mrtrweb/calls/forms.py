"""Forms for starting a call: tool arguments, prompt arguments, resource template variables.

A tool's ``inputSchema`` is full JSON Schema, not the flat elicitation vocabulary, so it gets
a lenient mapping of its own: a schema whose properties are all strings, numbers, integers,
booleans or scalar enums (each possibly nullable) becomes one field per property; anything
else (objects, arrays, ``$ref``, unions) is edited as JSON. The server validates the
arguments in any case; these forms only spare the person a round trip and type the values.

Field names are ``field_name_for(name)``: argument and variable names are server strings.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from django import forms
from django.utils.html import escape

from mrtrweb.elicitation import field_name_for
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
        return self.title if self.title and self.title.strip() else self.name or "Argument"


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
        "title": _text_or_none(prop.get("title")),
        "description": _text_or_none(prop.get("description")),
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
        format=_text_or_none(prop.get("format")),
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


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _number_or_none(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value if math.isfinite(value) else None


def _count_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


# -- tool arguments -----------------------------------------------------------------------------


class ArgumentsForm(forms.Form):
    """One field per flat argument; ``arguments()`` is the typed JSON object to send."""

    required_css_class = "required"
    error_css_class = "error"

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
        label="Arguments (a JSON object)",
        widget=forms.Textarea(attrs={"rows": 12, "spellcheck": "false", "class": "code"}),
        initial="{}",
        strip=False,
    )

    def clean_arguments(self) -> str:
        text: str = self.cleaned_data["arguments"]
        try:
            value = json.loads(text)
        except ValueError as exc:
            raise forms.ValidationError(f"This is not valid JSON: {exc}") from None
        if not isinstance(value, dict):
            raise forms.ValidationError("The arguments must be a JSON object ({…}).")
        return text


# -- prompts ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PromptArgumentSpec:
    name: str
    required: bool
    title: str | None = None
    description: str | None = None

    @property
    def field_name(self) -> str:
        return field_name_for(self.name)


def prompt_arguments(prompt: Mapping[str, Any]) -> tuple[PromptArgumentSpec, ...]:
    specs = []
    for raw in prompt.get("arguments") or []:
        if not isinstance(raw, Mapping) or not isinstance(raw.get("name"), str):
            continue
        specs.append(
            PromptArgumentSpec(
                name=raw["name"],
                required=raw.get("required") is True,
                title=_text_or_none(raw.get("title")),
                description=_text_or_none(raw.get("description")),
            )
        )
    return tuple(specs)


class PromptArgumentsForm(forms.Form):
    """A prompt's declared arguments, all strings; empty optional ones are left out."""

    required_css_class = "required"
    error_css_class = "error"

    def __init__(self, specs: Sequence[PromptArgumentSpec], *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("prefix", "arg")
        super().__init__(*args, **kwargs)
        self.specs = tuple(specs)
        for spec in self.specs:
            self.fields[spec.field_name] = forms.CharField(
                label=spec.title or spec.name or "Argument",
                required=spec.required,
                help_text=escape(spec.description) if spec.description else "",
            )

    def arguments(self) -> dict[str, str]:
        return {
            spec.name: self.cleaned_data[spec.field_name]
            for spec in self.specs
            if self.cleaned_data.get(spec.field_name)
        }


# -- resource templates (RFC 6570) ----------------------------------------------------------------

_EXPRESSION = re.compile(r"\{([^{}]*)\}")
_RESERVED = ":/?#[]@!$&'()*+,;="


@dataclass(frozen=True)
class _Operator:
    first: str = ""
    separator: str = ","
    named: bool = False
    if_empty: str = ""
    reserved: bool = False


_OPERATORS = {
    "": _Operator(),
    "+": _Operator(reserved=True),
    "#": _Operator(first="#", reserved=True),
    ".": _Operator(first=".", separator="."),
    "/": _Operator(first="/", separator="/"),
    ";": _Operator(first=";", separator=";", named=True),
    "?": _Operator(first="?", separator="&", named=True, if_empty="="),
    "&": _Operator(first="&", separator="&", named=True, if_empty="="),
}


@dataclass(frozen=True)
class _Variable:
    name: str
    prefix: int | None = None


@dataclass(frozen=True)
class _Expression:
    operator: _Operator
    variables: tuple[_Variable, ...] = field(default_factory=tuple)


def _parse_expression(body: str) -> _Expression:
    op = body[:1] if body[:1] in _OPERATORS and body[:1] else ""
    variables = []
    for spec in body[len(op) :].split(","):
        name, _, length = spec.rstrip("*").partition(":")
        prefix = int(length) if length.isdigit() else None
        if name:
            variables.append(_Variable(name, prefix))
    return _Expression(_OPERATORS[op], tuple(variables))


def template_variables(template: str) -> list[str]:
    """The variable names of a URI template, in order, each once."""
    names: list[str] = []
    for match in _EXPRESSION.finditer(template):
        for variable in _parse_expression(match.group(1)).variables:
            if variable.name not in names:
                names.append(variable.name)
    return names


def expand_uri_template(template: str, values: Mapping[str, str]) -> str:
    """RFC 6570 expansion (levels 1-3 and the prefix modifier) with string values."""

    def expand(match: re.Match[str]) -> str:
        expression = _parse_expression(match.group(1))
        op = expression.operator
        parts = []
        for variable in expression.variables:
            value = values.get(variable.name)
            if value is None:
                continue
            if variable.prefix is not None:
                value = value[: variable.prefix]
            encoded = quote(value, safe=_RESERVED if op.reserved else "")
            if op.named:
                parts.append(
                    f"{variable.name}={encoded}" if encoded else variable.name + op.if_empty
                )
            else:
                parts.append(encoded)
        return op.first + op.separator.join(parts) if parts else ""

    return _EXPRESSION.sub(expand, template)


class TemplateForm(forms.Form):
    """One required text field per variable of a resource template."""

    required_css_class = "required"
    error_css_class = "error"

    def __init__(self, template: str, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("prefix", "var")
        super().__init__(*args, **kwargs)
        self.template = template
        self.variables = template_variables(template)
        for name in self.variables:
            self.fields[field_name_for(name)] = forms.CharField(label=name)

    def uri(self) -> str:
        values = {name: self.cleaned_data[field_name_for(name)] for name in self.variables}
        return expand_uri_template(self.template, values)
