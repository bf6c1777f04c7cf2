"""Classifying a flat ``requestedSchema`` into typed field specs, all or nothing.

The wire shapes are checked with the 2026-07-28 models of :mod:`.wire` (validated in
strict mode, so ``"minimum": "5"`` or ``"default": 1`` on a boolean are refused rather than
coerced). Those models ignore unknown keys, so every property is also held to an allow-list
of keywords: a keyword we do not enforce (``pattern``, ``multipleOf``, ``$ref``, ...) would
let a person submit something the server then rejects, so it makes the whole request
unsupported instead of being dropped silently.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from mrtrweb.elicitation.names import field_name_for
from mrtrweb.elicitation.wire import (
    BooleanSchema,
    LegacyTitledEnumSchema,
    NumberSchema,
    RequestedSchema,
    StringSchema,
    TitledMultiSelectEnumSchema,
    TitledSingleSelectEnumSchema,
    UntitledMultiSelectEnumSchema,
    UntitledSingleSelectEnumSchema,
)

# Keywords that only annotate; JSON Schema validators ignore them, and so may we.
ANNOTATION_KEYS = frozenset(
    {"title", "description", "$comment", "examples", "deprecated", "readOnly", "writeOnly"}
)
# ``$defs``/``definitions`` are inert containers: they only matter through ``$ref``, which
# is refused wherever it appears. ``additionalProperties`` never matters, as we only ever
# send declared properties.
TOP_LEVEL_KEYS = frozenset(
    {"type", "properties", "required", "$schema", "$id", "$defs", "definitions"}
    | {"additionalProperties"}
    | ANNOTATION_KEYS
)
STRING_FORMATS = ("email", "uri", "date", "date-time")
# A form must stay one a person can fill in, on a page that renders in good time: Django
# renders a select or checkbox list at about a millisecond an option, so a server's 100,000
# options cost 13 s on every view of the round. More than this is refused, not shown.
MAX_FIELDS = 100
MAX_OPTIONS = 1000
MAX_FORM_OPTIONS = 2000

_M = TypeVar("_M", bound=BaseModel)


class UnsupportedSchema(ValueError):
    """The schema is outside the flat elicitation vocabulary; nothing of it may be rendered."""

    def __init__(self, reason: str, *, prop: str | None = None) -> None:
        self.reason = reason
        self.prop = prop
        where = "" if prop is None else f"property {prop!r}: "
        super().__init__(where + reason)


class Kind(StrEnum):
    STRING = "string"
    NUMBER = "number"
    INTEGER = "integer"
    BOOLEAN = "boolean"
    SINGLE_SELECT = "single_select"
    MULTI_SELECT = "multi_select"


class EnumStyle(StrEnum):
    UNTITLED = "untitled"  # enum / items.enum: the values are the labels
    TITLED = "titled"  # oneOf / items.anyOf of {const, title}
    LEGACY = "legacy"  # enum + enumNames (deprecated, SEP-1330)


@dataclass(frozen=True)
class Option:
    value: str
    title: str | None = None

    @property
    def label(self) -> str:
        # An empty or blank title would leave a radio button with no accessible name.
        return self.title if self.title and self.title.strip() else self.value


@dataclass(frozen=True)
class FieldSpec:
    """One property of the schema, with everything needed to ask for it and check the answer."""

    prop: str
    kind: Kind
    required: bool
    title: str | None = None
    description: str | None = None
    default: Any = None  # type-checked wire value, None when absent
    format: str | None = None
    min_length: int | None = None
    max_length: int | None = None
    minimum: int | float | None = None
    maximum: int | float | None = None
    options: tuple[Option, ...] = ()
    enum_style: EnumStyle | None = None
    min_items: int | None = None
    max_items: int | None = None

    @property
    def field_name(self) -> str:
        return field_name_for(self.prop)

    @property
    def label(self) -> str:
        for candidate in (self.title, self.prop):
            if candidate and candidate.strip():
                return candidate
        return "Answer"

    def option_values(self) -> tuple[str, ...]:
        return tuple(option.value for option in self.options)


@dataclass(frozen=True)
class FormSpec:
    fields: tuple[FieldSpec, ...]

    def __iter__(self) -> Iterator[FieldSpec]:
        return iter(self.fields)

    def __len__(self) -> int:
        return len(self.fields)

    def field(self, prop: str) -> FieldSpec:
        for spec in self.fields:
            if spec.prop == prop:
                return spec
        raise KeyError(prop)

    @property
    def required(self) -> tuple[str, ...]:
        return tuple(spec.prop for spec in self.fields if spec.required)


def classify(schema: Mapping[str, Any]) -> FormSpec:
    """Parse a ``requestedSchema`` into field specs, or raise ``UnsupportedSchema``.

    Properties keep the schema's order. Defaults are type-checked here; whether a default
    also meets its own constraints is left to the form, which drops one it would refuse.
    """
    if not isinstance(schema, Mapping):
        raise UnsupportedSchema("requestedSchema must be a JSON object")
    extra = sorted(set(schema) - TOP_LEVEL_KEYS, key=str)
    if extra:
        raise UnsupportedSchema(f"unsupported top-level keyword(s): {', '.join(map(str, extra))}")
    properties = schema.get("properties")
    if isinstance(properties, Mapping) and len(properties) > MAX_FIELDS:
        raise UnsupportedSchema(
            f"{len(properties)} properties, more than the {MAX_FIELDS} a form may have"
        )
    top = _validate(RequestedSchema, schema, None)
    required_names = top.required or []
    unknown = [name for name in required_names if name not in top.properties]
    if unknown:
        raise UnsupportedSchema(f"required names unknown properties: {unknown!r}")
    required = set(required_names)
    fields = []
    for prop, definition in top.properties.items():
        fields.append(_classify_property(prop, definition, prop in required))
    options = sum(len(spec.options) for spec in fields)
    if options > MAX_FORM_OPTIONS:
        raise UnsupportedSchema(
            f"{options} options in all, more than the {MAX_FORM_OPTIONS} a form may have"
        )
    return FormSpec(fields=tuple(fields))


def _classify_property(prop: str, definition: Any, required: bool) -> FieldSpec:
    if not isinstance(definition, Mapping):
        raise UnsupportedSchema("property schema must be a JSON object", prop=prop)
    if "$ref" in definition:
        raise UnsupportedSchema("$ref is not supported", prop=prop)
    kind = definition.get("type")
    if kind is None:
        raise UnsupportedSchema("every property needs a type", prop=prop)
    if kind == "string":
        if "oneOf" in definition:
            return _titled_single(prop, definition, required)
        if "enum" in definition:
            if "enumNames" in definition:
                return _legacy_single(prop, definition, required)
            return _untitled_single(prop, definition, required)
        return _string(prop, definition, required)
    if kind in ("number", "integer"):
        return _number(prop, definition, required)
    if kind == "boolean":
        _check_keys(prop, definition, {"type", "default"})
        model = _validate(BooleanSchema, definition, prop)
        return FieldSpec(
            prop=prop,
            kind=Kind.BOOLEAN,
            required=required,
            title=model.title,
            description=model.description,
            default=model.default,
        )
    if kind == "array":
        return _multi(prop, definition, required)
    if kind == "object":
        raise UnsupportedSchema("nested objects are not supported", prop=prop)
    raise UnsupportedSchema(f"unsupported type {kind!r}", prop=prop)


def _string(prop: str, definition: Mapping[str, Any], required: bool) -> FieldSpec:
    _check_keys(prop, definition, {"type", "default", "minLength", "maxLength", "format"})
    fmt = definition.get("format")
    if fmt is not None and fmt not in STRING_FORMATS:
        raise UnsupportedSchema(f"unsupported string format {fmt!r}", prop=prop)
    model = _validate(StringSchema, definition, prop)
    _check_range(prop, "minLength", model.min_length, "maxLength", model.max_length, count=True)
    return FieldSpec(
        prop=prop,
        kind=Kind.STRING,
        required=required,
        title=model.title,
        description=model.description,
        default=model.default,
        format=model.format,
        min_length=model.min_length,
        max_length=model.max_length,
    )


def _number(prop: str, definition: Mapping[str, Any], required: bool) -> FieldSpec:
    _check_keys(prop, definition, {"type", "default", "minimum", "maximum"})
    model = _validate(NumberSchema, definition, prop)
    for name, value in (
        ("minimum", model.minimum),
        ("maximum", model.maximum),
        ("default", model.default),
    ):
        if isinstance(value, float) and not math.isfinite(value):
            raise UnsupportedSchema(f"{name} must be a finite number", prop=prop)
    _check_range(prop, "minimum", model.minimum, "maximum", model.maximum)
    if (
        model.type == "integer"
        and model.minimum is not None
        and model.maximum is not None
        and math.ceil(model.minimum) > math.floor(model.maximum)
    ):
        raise UnsupportedSchema("no integer lies between minimum and maximum", prop=prop)
    return FieldSpec(
        prop=prop,
        kind=Kind.INTEGER if model.type == "integer" else Kind.NUMBER,
        required=required,
        title=model.title,
        description=model.description,
        default=model.default,
        minimum=model.minimum,
        maximum=model.maximum,
    )


def _untitled_single(prop: str, definition: Mapping[str, Any], required: bool) -> FieldSpec:
    _check_keys(prop, definition, {"type", "default", "enum"})
    model = _validate(UntitledSingleSelectEnumSchema, definition, prop)
    options = _options(prop, [(value, None) for value in model.enum])
    return _single(prop, model, required, options, EnumStyle.UNTITLED)


def _legacy_single(prop: str, definition: Mapping[str, Any], required: bool) -> FieldSpec:
    _check_keys(prop, definition, {"type", "default", "enum", "enumNames"})
    model = _validate(LegacyTitledEnumSchema, definition, prop)
    names = model.enum_names
    if names is None:
        # ``"enumNames": null`` validates; read it as if the key were absent.
        options = _options(prop, [(value, None) for value in model.enum])
        return _single(prop, model, required, options, EnumStyle.UNTITLED)
    if len(names) != len(model.enum):
        raise UnsupportedSchema("enumNames must be as long as enum", prop=prop)
    options = _options(prop, list(zip(model.enum, names, strict=True)))
    return _single(prop, model, required, options, EnumStyle.LEGACY)


def _titled_single(prop: str, definition: Mapping[str, Any], required: bool) -> FieldSpec:
    _check_keys(prop, definition, {"type", "default", "oneOf"})
    _check_const_items(prop, definition.get("oneOf"), "oneOf")
    model = _validate(TitledSingleSelectEnumSchema, definition, prop)
    options = _options(prop, [(item.const, item.title) for item in model.one_of])
    return _single(prop, model, required, options, EnumStyle.TITLED)


def _single(
    prop: str, model: Any, required: bool, options: tuple[Option, ...], style: EnumStyle
) -> FieldSpec:
    return FieldSpec(
        prop=prop,
        kind=Kind.SINGLE_SELECT,
        required=required,
        title=model.title,
        description=model.description,
        default=model.default,
        options=options,
        enum_style=style,
    )


def _multi(prop: str, definition: Mapping[str, Any], required: bool) -> FieldSpec:
    _check_keys(prop, definition, {"type", "default", "items", "minItems", "maxItems"})
    items = definition.get("items")
    if not isinstance(items, Mapping):
        raise UnsupportedSchema("array items must be a JSON object", prop=prop)
    model: UntitledMultiSelectEnumSchema | TitledMultiSelectEnumSchema
    if "anyOf" in items:
        _check_keys(prop, items, {"anyOf", "type"}, where="items")
        if items.get("type", "string") != "string":
            raise UnsupportedSchema("multi-select items must be strings", prop=prop)
        _check_const_items(prop, items.get("anyOf"), "items.anyOf")
        model = _validate(TitledMultiSelectEnumSchema, definition, prop)
        options = _options(prop, [(item.const, item.title) for item in model.items.any_of])
        style = EnumStyle.TITLED
    elif "enum" in items:
        _check_keys(prop, items, {"enum", "type"}, where="items")
        model = _validate(UntitledMultiSelectEnumSchema, definition, prop)
        options = _options(prop, [(value, None) for value in model.items.enum])
        style = EnumStyle.UNTITLED
    else:
        raise UnsupportedSchema(
            "arrays are supported only as multi-selects (items.enum or items.anyOf)", prop=prop
        )
    _check_range(prop, "minItems", model.min_items, "maxItems", model.max_items, count=True)
    if model.min_items is not None and model.min_items > len(options):
        raise UnsupportedSchema("minItems exceeds the number of options", prop=prop)
    return FieldSpec(
        prop=prop,
        kind=Kind.MULTI_SELECT,
        required=required,
        title=model.title,
        description=model.description,
        default=model.default,
        options=options,
        enum_style=style,
        min_items=model.min_items,
        max_items=model.max_items,
    )


def _options(prop: str, pairs: Sequence[tuple[str, str | None]]) -> tuple[Option, ...]:
    if not pairs:
        raise UnsupportedSchema("an enumeration needs at least one option", prop=prop)
    if len(pairs) > MAX_OPTIONS:
        raise UnsupportedSchema(
            f"{len(pairs)} options, more than the {MAX_OPTIONS} a field may have", prop=prop
        )
    values = [value for value, _ in pairs]
    if len(set(values)) != len(values):
        # Which title would a duplicate value carry? Refuse rather than guess.
        raise UnsupportedSchema("enumeration values must be unique", prop=prop)
    return tuple(Option(value=value, title=title) for value, title in pairs)


def _check_const_items(prop: str, items: Any, where: str) -> None:
    if not isinstance(items, list):
        raise UnsupportedSchema(f"{where} must be an array", prop=prop)
    for item in items:
        if not isinstance(item, Mapping) or "const" not in item or "title" not in item:
            raise UnsupportedSchema(f"every {where} entry needs const and title", prop=prop)
        _check_keys(prop, item, {"const", "title"}, where=where)


def _check_keys(
    prop: str, definition: Mapping[str, Any], allowed: set[str], where: str | None = None
) -> None:
    extra = sorted(set(definition) - allowed - ANNOTATION_KEYS, key=str)
    if extra:
        place = f" in {where}" if where else ""
        raise UnsupportedSchema(
            f"unsupported keyword(s){place}: {', '.join(map(str, extra))}", prop=prop
        )


def _check_range(
    prop: str,
    low_name: str,
    low: int | float | None,
    high_name: str,
    high: int | float | None,
    *,
    count: bool = False,
) -> None:
    if count:
        for name, value in ((low_name, low), (high_name, high)):
            if value is not None and value < 0:
                raise UnsupportedSchema(f"{name} must not be negative", prop=prop)
    if low is not None and high is not None and low > high:
        raise UnsupportedSchema(f"{low_name} is greater than {high_name}", prop=prop)


def _validate(model: type[_M], data: Mapping[str, Any], prop: str | None) -> _M:
    try:
        return model.model_validate(dict(data), strict=True)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "schema"
        raise UnsupportedSchema(f"{where}: {first['msg']}", prop=prop) from None
