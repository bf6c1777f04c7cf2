"""Generated input requests (valid, borderline, hostile) and what might be posted for them.

Every input request comes labelled with its class and, where the outcome is certain, what the
product must do with it: ``render`` (a valid request, hostile text or not) or ``refuse`` (a
shape outside the flat vocabulary). ``None`` means either is fine, as long as it is clean.

Text that could run as script carries the marker ``XSS_MARK``, so a page can be searched for
it in any live position (a tag, an attribute name, a script body).
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from mrtrweb.elicitation import FormSpec, Kind
from mrtrweb.elicitation.schema import MAX_FORM_OPTIONS, MAX_OPTIONS
from tests.elicitation.strategies import (
    any_text,
    boolean_definitions,
    multi_definitions,
    number_definitions,
    single_definitions,
    string_definitions,
)

XSS_MARK = "fuzzxss"
PAYLOADS = (
    f"<script>{XSS_MARK}(1)</script>",
    f"<SCRIPT SRC=//{XSS_MARK}.test/x.js></SCRIPT>",
    f'"><script>{XSS_MARK}(2)</script>',
    f"'><img src=x onerror={XSS_MARK}(3)>",
    f"</textarea><script>{XSS_MARK}(4)</script>",
    f"</option></select><svg onload={XSS_MARK}(5)>",
    f'" autofocus onfocus="{XSS_MARK}(6)',
    f"javascript:{XSS_MARK}(7)",
    f"<a href=javascript:{XSS_MARK}(8)>x</a>",
    f"{{{{ {XSS_MARK} }}}}{{% {XSS_MARK} %}}",
    f"<!--{XSS_MARK}--><iframe srcdoc='<script>{XSS_MARK}(9)</script>'>",
    f"</legend></fieldset></form><form action=//{XSS_MARK}.test><button>{XSS_MARK}",
)
# Bidirectional controls, zero-width characters, a BOM, combining marks, emoji, a lone
# surrogate (legal in JSON text), NUL and other C0 controls.
ODD = (
    "\u202e\u202d\u200f\u200e\u200b\u200c\u200d\u2060\ufeff\u0301\u0336\U0001f600"
    "\ud800\x00\x07\x1b\r\n\t"
)
RTL = "שלום עולם مرحبا بالعالم"
NAN_LIKE = ("NaN", "nan", "Infinity", "-Infinity", "1e999", "-0", "0x10", "1_000", "١٢٣", " 5 ")

odd_text = st.text(alphabet=st.sampled_from(ODD + RTL + "ab<>&\"'"), max_size=12)


# Named functions, not lambdas, throughout: hypothesis describes a lambda by parsing its
# source, for every example, which costs more than the example itself.
def _repeat(n: int, unit: str) -> str:
    return (unit * (n // len(unit) + 1))[:n]


def _joined(*parts: str) -> str:
    return "".join(parts)


def long_text(low: int = 1_000, high: int = 60_000) -> st.SearchStrategy[str]:
    """Long strings built by repetition (hypothesis would spend ages drawing them)."""
    return st.builds(
        _repeat, st.integers(low, high), st.sampled_from(["x", "ab ", "ش\u200b", *PAYLOADS])
    )


short_nasty_text = st.one_of(
    any_text,
    st.sampled_from(PAYLOADS),
    odd_text,
    st.sampled_from(NAN_LIKE),
    st.builds(_joined, odd_text, st.sampled_from(PAYLOADS), odd_text),
)
nasty_text = short_nasty_text | long_text()

# JSON as a server may send it: json.loads keeps NaN and Infinity, and integers up to its
# 4300-digit limit.
json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from([10**300, -(10**4000), 2**53 + 1, 2**63, -1, 0]),
    st.floats(),
    st.sampled_from([1e308, -1e308, 5e-324, math.inf, -math.inf, math.nan, -0.0]),
    nasty_text,
)


def _json_containers(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.lists(inner, max_size=4) | st.dictionaries(nasty_text, inner, max_size=4)


json_values = st.recursive(json_scalars, _json_containers, max_leaves=12)


@dataclass(frozen=True)
class Generated:
    kind: str  # valid, borderline, hostile
    request: Any  # the input request, as a server's JSON would parse
    expect: str | None = None  # render, refuse, or None

    @property
    def label(self) -> str:
        return f"{self.kind}/{self.expect or 'either'}"


def form_request(schema: Any, message: Any = "Please answer.", **params: Any) -> dict[str, Any]:
    return {
        "method": "elicitation/create",
        "params": {"mode": "form", "message": message, "requestedSchema": schema, **params},
    }


# -- valid ------------------------------------------------------------------------------------

valid_properties = st.one_of(
    string_definitions(),
    number_definitions(),
    boolean_definitions(),
    single_definitions(),
    multi_definitions(),
)


_TITLE_TEXT = st.sampled_from(PAYLOADS) | odd_text


def hostile_annotations(draw: st.DrawFn, definition: dict[str, Any]) -> dict[str, Any]:
    """Script, bidi and endless text in every place a schema may carry free text."""
    for key in ("title", "description"):
        if draw(st.booleans()):
            definition[key] = draw(nasty_text)
    for list_key, item_key in (("oneOf", None), ("enumNames", None)):
        if list_key in definition and draw(st.booleans()):
            items = definition[list_key]
            for i in range(len(items)):
                title = draw(_TITLE_TEXT)
                if item_key is None and isinstance(items[i], dict):
                    items[i] = {**items[i], "title": title}
                else:
                    items[i] = title
    items = definition.get("items")
    if isinstance(items, dict) and "anyOf" in items and draw(st.booleans()):
        items["anyOf"] = [{**item, "title": draw(nasty_text)} for item in items["anyOf"]]
    return definition


@st.composite
def annotated_properties(draw: st.DrawFn) -> dict[str, Any]:
    return hostile_annotations(draw, draw(valid_properties))


# Built once: hypothesis validates every new strategy object, which is slow enough to matter.
_PROPERTIES = st.dictionaries(any_text, valid_properties, max_size=6)
_HOSTILE_PROPERTIES = st.dictionaries(
    st.one_of(any_text, _TITLE_TEXT), annotated_properties(), max_size=6
)


@st.composite
def valid_schemas(draw: st.DrawFn, annotate: bool = False) -> dict[str, Any]:
    properties = draw(_HOSTILE_PROPERTIES if annotate else _PROPERTIES)
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if properties and draw(st.booleans()):
        schema["required"] = draw(st.lists(st.sampled_from(sorted(properties)), unique=True))
    for key in ("title", "description"):
        if annotate and draw(st.booleans()):
            schema[key] = draw(nasty_text)
    if draw(st.booleans()):
        schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return schema


VALID_SCHEMAS = valid_schemas()
HOSTILE_SCHEMAS = valid_schemas(annotate=True)


@st.composite
def valid_requests(draw: st.DrawFn) -> Generated:
    schema = draw(VALID_SCHEMAS)
    message = draw(any_text)
    request = form_request(schema, message)
    if draw(st.booleans()):
        del request["params"]["mode"]  # no mode means form mode
    return Generated("valid", request, "render")


@st.composite
def url_requests(draw: st.DrawFn) -> Generated:
    url = draw(
        st.sampled_from(
            [
                "https://example.com/login",
                "https://xn--80ak6aa92e.com/",
                f"javascript:{XSS_MARK}(1)",
                f"data:text/html,<script>{XSS_MARK}</script>",
                "http://127.0.0.1:8000/admin/",
                "https://user:pw@example.com/",
                "https://exa mple.com/",
                "",
            ]
        )
        | nasty_text
    )
    request = {
        "method": "elicitation/create",
        "params": {"mode": "url", "message": draw(nasty_text), "url": url},
    }
    if draw(st.booleans()):
        request["params"]["elicitationId"] = draw(any_text)
    return Generated("borderline", request, None)


URL_REQUESTS = url_requests()

# -- borderline -------------------------------------------------------------------------------

_VERY_LONG = long_text(10_000, 80_000)


@st.composite
def borderline_properties(draw: st.DrawFn) -> tuple[dict[str, Any], str | None]:
    """One property at an edge of the vocabulary, and whether it must render or be refused."""
    # Hypothesis draws the low end of a range most: the costly shapes (huge enumerations,
    # endless text) come last.
    choice = draw(st.integers(0, 13))
    n = draw(st.integers(0, 50))
    big = draw(st.sampled_from([1e308, -1e308, 5e-324, 2**53 + 1, 10**300, 1.7976931348623157e308]))
    if choice == 13:  # a huge enumeration
        count = draw(st.integers(200, 3000))
        suffix = draw(st.sampled_from(["", RTL, "<b>"]))  # one draw, not thousands
        values = [f"option {i} {suffix}" for i in range(count)]
        style = draw(st.sampled_from(["enum", "oneOf", "multi"]))
        # More options than a field may have are refused (a page must render in good time).
        fits = "render" if count <= MAX_OPTIONS else "refuse"
        if style == "enum":
            return {"type": "string", "enum": values}, fits
        titled = [{"const": v, "title": f"{XSS_MARK}<i>{i}</i>"} for i, v in enumerate(values)]
        if style == "oneOf":
            return {"type": "string", "oneOf": titled}, fits
        return {"type": "array", "items": {"anyOf": titled}, "maxItems": count}, fits
    if choice == 1:  # bounds equal
        kind = draw(st.sampled_from(["string", "integer", "number", "array"]))
        if kind == "string":
            return {"type": "string", "minLength": n, "maxLength": n}, "render"
        if kind == "array":
            values = [str(i) for i in range(max(n, 1))]
            return {
                "type": "array",
                "items": {"type": "string", "enum": values},
                "minItems": len(values),
                "maxItems": len(values),
            }, "render"
        bound = draw(st.sampled_from([n, float(n), big, -big]))
        if kind == "integer" and isinstance(bound, float) and not bound.is_integer():
            bound = n
        return {"type": kind, "minimum": bound, "maximum": bound}, "render"
    if choice == 2:  # minimum above maximum
        kind = draw(st.sampled_from(["minLength", "minimum", "minItems"]))
        if kind == "minLength":
            return {"type": "string", "minLength": n + 1, "maxLength": n}, "refuse"
        if kind == "minItems":
            return {
                "type": "array",
                "items": {"type": "string", "enum": ["a", "b"]},
                "minItems": 2,
                "maxItems": 1,
            }, "refuse"
        return {"type": "number", "minimum": big, "maximum": -big}, "refuse" if big > 0 else None
    if choice == 3:  # enormous bounds and defaults
        kind = draw(st.sampled_from(["number", "integer"]))
        definition: dict[str, Any] = {"type": kind}
        for key in draw(st.lists(st.sampled_from(["minimum", "maximum", "default"]), unique=True)):
            definition[key] = draw(st.sampled_from([big, -big, 0, 10**300, -(10**300)]))
        return definition, None
    if choice == 4:  # NaN and infinities where numbers go
        key = draw(st.sampled_from(["minimum", "maximum", "default"]))
        value = draw(st.sampled_from([math.nan, math.inf, -math.inf]))
        return {"type": "number", key: value}, "refuse"
    if choice == 5:  # number-like strings where numbers go (strict validation refuses them)
        key = draw(st.sampled_from(["minimum", "maximum", "default"]))
        return {
            "type": draw(st.sampled_from(["number", "integer"])),
            key: draw(st.sampled_from(NAN_LIKE)),
        }, "refuse"
    if choice == 12:  # very long everything
        text = draw(_VERY_LONG)
        return {
            "type": "string",
            "title": text,
            "description": text,
            "default": text,
            "maxLength": draw(st.sampled_from([None, 10, 10**9, 2**63])) or 10**12,
        }, "render"
    if choice == 7:  # defaults that do not fit
        kind = draw(st.sampled_from(["string", "integer", "enum", "multi", "boolean"]))
        wrong = draw(json_values)
        if kind == "string":
            return {"type": "string", "maxLength": 2, "default": "far too long"}, "render"
        if kind == "integer":
            return {"type": "integer", "minimum": 5, "default": 2}, "render"
        if kind == "enum":
            return {"type": "string", "enum": ["a"], "default": "b"}, "render"
        if kind == "multi":
            return {
                "type": "array",
                "items": {"type": "string", "enum": ["a"]},
                "default": ["b", "a", "a"],
            }, None
        fits = wrong is None or isinstance(wrong, bool)  # null reads as no default
        return {"type": "boolean", "default": wrong}, None if fits else "refuse"
    if choice == 8:  # empty and blank option values and titles
        values = ["", " ", "\u200b", "\ufeff"]
        return {"type": "string", "oneOf": [{"const": v, "title": v} for v in values]}, "render"
    if choice == 9:  # minItems above the number of options, negative counts
        return draw(
            st.sampled_from(
                [
                    {"type": "array", "items": {"type": "string", "enum": ["a"]}, "minItems": 2},
                    {"type": "string", "minLength": -1},
                    {"type": "array", "items": {"type": "string", "enum": ["a"]}, "maxItems": -1},
                ]
            )
        ), "refuse"
    if choice == 10:  # an integer range that holds no integer
        return {"type": "integer", "minimum": 0.2, "maximum": 0.8}, "refuse"
    if choice == 11:  # duplicate options
        return {"type": "string", "enum": ["a", "a"]}, "refuse"
    if choice == 6:  # every format, with edge defaults
        fmt = draw(st.sampled_from(["email", "uri", "date", "date-time"]))
        default = draw(
            st.sampled_from(
                ["", "0000-00-00", "9999-12-31T23:59:60Z", "a@b", "http://[::1", "x" * 5000]
            )
            | FORMAT_TEXT[fmt]
        )
        return {"type": "string", "format": fmt, "default": default}, "render"
    # choice 0: booleans and numbers in JSON's other spellings (1 for true, true for 1):
    # strict validation decides; either way is clean.
    return draw(
        st.sampled_from(
            [
                {"type": "boolean", "default": 1},
                {"type": "integer", "default": True},
                {"type": "integer", "default": 1.0},
                {"type": "number", "minimum": False},
            ]
        )
    ), None


_BORDERLINE_LISTS = st.lists(borderline_properties(), min_size=1, max_size=3)


def _options(definition: dict[str, Any]) -> int:
    """How many options a property offers (as the form counts them), 0 for free input."""
    items = definition.get("items")
    for source in (definition, items if isinstance(items, dict) else {}):
        for key in ("enum", "oneOf", "anyOf"):
            if isinstance(source.get(key), list):
                return len(source[key])
    return 0


@st.composite
def borderline_requests(draw: st.DrawFn) -> Generated:
    shape = draw(st.integers(0, 4))
    if shape == 0:  # no questions at all
        schema: dict[str, Any] = {"type": "object", "properties": {}}
        if draw(st.booleans()):
            schema["required"] = []
        return Generated("borderline", form_request(schema, draw(nasty_text)), "render")
    if shape == 1:
        return draw(URL_REQUESTS)
    picked = draw(_BORDERLINE_LISTS)
    names = draw(st.lists(nasty_text, min_size=len(picked), max_size=len(picked), unique=True))
    properties = {name: definition for name, (definition, _) in zip(names, picked, strict=True)}
    expects = [expect for _, expect in picked]
    if sum(_options(definition) for definition, _ in picked) > MAX_FORM_OPTIONS:
        expects.append("refuse")  # fields that fit one by one, but not together
    if "refuse" in expects:
        expect: str | None = "refuse"
    elif all(e == "render" for e in expects):
        expect = "render"
    else:
        expect = None
    schema = {"type": "object", "properties": properties}
    if draw(st.booleans()):
        schema["required"] = list(properties)
    return Generated("borderline", form_request(schema, draw(nasty_text)), expect)


# -- hostile ----------------------------------------------------------------------------------

REFUSED_PROPERTIES = (
    {"type": "object", "properties": {"a": {"type": "string"}}},
    {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "string"}}}},
    {"type": "array", "items": {"type": "string"}},
    {"type": "array", "items": {"enum": [{"a": 1}]}},
    {"$ref": "#/$defs/x"},
    {"type": "string", "$ref": "#/$defs/x"},
    {"type": "string", "format": "hostname"},
    {"type": "string", "format": f"<script>{XSS_MARK}</script>"},
    {"type": "string", "pattern": "^(a+)+$"},
    {"type": "number", "multipleOf": 0.1},
    {"type": ["string", "null"]},
    {"type": "null"},
    {"type": f"<script>{XSS_MARK}</script>"},
    {"anyOf": [{"type": "string"}, {"type": "number"}]},
    {"type": "string", "oneOf": [{"const": "a"}]},
    {"type": "string", "oneOf": "a"},
    {"type": "string", "enum": "a"},
    {"type": "string", "enum": []},
    {"type": "string", "enum": [1, 2]},
    {"type": "string", "enum": ["a", "b"], "enumNames": ["A"]},
    {"type": "string", "minLength": "5"},
    {"type": "string", "maxLength": 1.5},
    {"type": "integer", "minimum": "0"},
    {"type": "boolean", "default": "true"},
    {"type": "array", "items": {"type": "string", "enum": ["a"]}, "uniqueItems": False},
    {"type": "array", "items": {"enum": ["a"]}},  # untitled items need their type
    {"type": "array", "items": {"anyOf": [{"const": "a", "title": "A"}], "type": "number"}},
    {"type": "array", "items": [{"enum": ["a"]}]},
    {"type": "string", "if": {}, "then": {}},
    {},
    {"title": f"<script>{XSS_MARK}</script>"},
)


@st.composite
def hostile_requests(draw: st.DrawFn) -> Generated:
    shape = draw(st.integers(0, 9))
    if shape == 0:  # a valid shape with script and odd text wherever text goes
        schema = draw(HOSTILE_SCHEMAS)
        return Generated("hostile", form_request(schema, draw(nasty_text)), "render")
    if shape == 1:  # a property outside the vocabulary, beside valid ones
        bad = dict(draw(st.sampled_from(REFUSED_PROPERTIES)))
        good = draw(st.dictionaries(any_text, valid_properties, max_size=3))
        properties = {**good, draw(nasty_text): bad}
        schema = {"type": "object", "properties": properties}
        if draw(st.booleans()):
            schema["$defs"] = {"x": {"type": "string"}}
        return Generated("hostile", form_request(schema, draw(nasty_text)), "refuse")
    if shape == 2:  # the schema itself is not an object schema
        schema = draw(
            st.sampled_from(
                [
                    [],
                    "object",
                    None,
                    42,
                    {"type": "array", "items": {"type": "string"}},
                    {"type": "object"},
                    {"type": "object", "properties": []},
                    {"type": "object", "properties": {"a": "string"}},
                    {"type": "object", "properties": {"a": {"type": "string"}}, "required": "a"},
                    {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["b"]},
                    {"properties": {"a": {"type": "string"}}},
                    {"type": "object", "properties": {}, "allOf": [{}]},
                    {"type": "object", "properties": {}, "$ref": "#"},
                    {"type": "object", "properties": {}, "patternProperties": {".*": {}}},
                ]
            )
            | json_values
        )
        return Generated("hostile", form_request(schema, draw(nasty_text)), None)
    if shape == 3:  # the request around the schema is malformed
        schema = draw(VALID_SCHEMAS)
        request = draw(
            st.sampled_from(
                [
                    {"method": "elicitation/create"},
                    {"method": "elicitation/create", "params": None},
                    {"method": "elicitation/create", "params": []},
                    {"method": "elicitation/create", "params": {"requestedSchema": schema}},
                    {"method": "elicitation/create", "params": {"message": "m"}},
                    {
                        "method": "elicitation/create",
                        "params": {"message": 5, "requestedSchema": schema},
                    },
                    {
                        "method": "elicitation/create",
                        "params": {"message": "m", "mode": "voice", "requestedSchema": schema},
                    },
                    {
                        "method": "elicitation/create",
                        "params": {"message": "m", "mode": None, "requestedSchema": schema},
                    },
                    {"method": "elicitation/create", "params": {"message": "m", "mode": "url"}},
                    {
                        "method": "elicitation/create",
                        "params": {"message": "m", "mode": "url", "url": 5},
                    },
                    {
                        "method": "ELICITATION/CREATE",
                        "params": {"message": "m", "requestedSchema": schema},
                    },
                    {"params": {"message": "m", "requestedSchema": schema}},
                ]
            )
        )
        return Generated("hostile", request, "refuse")
    if shape == 4:  # not a JSON object at all
        return Generated(
            "hostile", draw(json_scalars | st.lists(json_values, max_size=3)), "refuse"
        )
    if shape == 5:  # a kind of request we never declared
        method = draw(
            st.sampled_from(
                ["sampling/createMessage", "roots/list", f"<script>{XSS_MARK}</script>"]
            )
            | nasty_text
        )
        return Generated("hostile", {"method": method, "params": draw(json_values)}, "refuse")
    if shape == 6:  # random JSON in every slot of a request
        request = {
            "method": "elicitation/create",
            "params": draw(
                st.fixed_dictionaries(
                    {},
                    optional={
                        "mode": json_values,
                        "message": json_values,
                        "requestedSchema": json_values,
                        "url": json_values,
                        "_meta": json_values,
                    },
                )
            ),
        }
        return Generated("hostile", request, None)
    # A valid request with one value somewhere inside replaced by random JSON, or one key added.
    schema = draw(VALID_SCHEMAS)
    request = form_request(schema, draw(any_text))
    for _ in range(draw(st.integers(1, 3))):
        mutate(draw, request)
    return Generated("hostile", request, None)


def _containers(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = []
    if isinstance(value, dict):
        found.append(path)
        for key, child in value.items():
            found += _containers(child, (*path, key))
    elif isinstance(value, list):
        found.append(path)
        for i, child in enumerate(value):
            found += _containers(child, (*path, i))
    return found


def mutate(draw: st.DrawFn, request: dict[str, Any]) -> None:
    where = draw(st.sampled_from(_containers(request)))
    target: Any = request
    for step in where:
        target = target[step]
    if isinstance(target, dict):
        keys = sorted(target, key=str)
        if keys and draw(st.booleans()):
            target[draw(st.sampled_from(keys))] = draw(json_values)
        else:
            key = draw(
                st.sampled_from(
                    ["$ref", "pattern", "type", "properties", "items", "enum", "oneOf", "default"]
                )
                | nasty_text
            )
            target[key] = draw(json_values)
    elif target:
        target[draw(st.integers(0, len(target) - 1))] = draw(json_values)
    else:
        target.append(draw(json_values))


input_requests = st.one_of(
    valid_requests(), valid_requests(), borderline_requests(), hostile_requests()
)


# -- what might be posted ---------------------------------------------------------------------


def _iso_seconds(moment: dt.datetime) -> str:
    return moment.isoformat(timespec="seconds")


FORMAT_TEXT = {
    "email": st.from_regex(r"[a-z0-9.+]{1,8}@[a-z]{1,10}(\.[a-z]{2,5})?", fullmatch=True),
    "uri": st.from_regex(r"(https?|urn|mailto|ftp):[a-z0-9/._~?=&%#-]{0,20}", fullmatch=True),
    "date": st.dates().map(dt.date.isoformat),
    "date-time": st.datetimes(
        min_value=dt.datetime(1, 1, 2), max_value=dt.datetime(9999, 12, 30)
    ).map(_iso_seconds)
    | st.sampled_from(["2026-02-30T10:00", "2026-08-01T09:30+14:00", "9999-12-31T23:59:59-23:59"]),
}
_ODD_NUMBERS = st.sampled_from(["1e308", "1e309", "-0", "1.", ".5", "1e-400", "1,5", "½"])
_ODD_INDICES = st.sampled_from(["", "0", "00", "+1", " 1", "1.0", "-0", "\u0660"])
_BOOLEAN_TEXT = st.sampled_from(["on", "", "off", "false", "0", "true", "ON", " "])
_HOW = st.integers(0, 9)  # hypothesis favours the low end: a fair try, 0 to 5
_MANY = st.integers(2, 3)
_EXTRA = st.integers(0, 2)


def _number_text(draw: st.DrawFn, spec: Any) -> str:
    low, high = spec.minimum, spec.maximum
    if low is None:
        low = min(-1e15, high if high is not None else 0)
    if high is None:
        high = max(1e15, low)
    if draw(st.booleans()):
        return draw(_ODD_NUMBERS)
    if spec.kind is Kind.INTEGER:
        return str(draw(st.integers(math.ceil(low), math.floor(high))))
    # Both ends into hypothesis's finite range (a bound past it, such as a minimum of 1.79e308,
    # would otherwise end above the clamped maximum).
    low, high = (float(min(max(end, -1e308), 1e308)) for end in (low, high))
    return repr(draw(st.floats(min_value=low, max_value=high, allow_nan=False)))


def plausible(draw: st.DrawFn, spec: Any) -> list[str]:
    """What a browser could post for ``spec``: often, not always, an acceptable answer."""
    kind = spec.kind
    if kind is Kind.BOOLEAN:
        return [draw(_BOOLEAN_TEXT)]
    if kind in (Kind.SINGLE_SELECT, Kind.MULTI_SELECT):
        n = len(spec.options)
        indices = st.integers(-1, n).map(str) | _ODD_INDICES
        if kind is Kind.SINGLE_SELECT:
            return [draw(indices)]
        if draw(st.booleans()):
            return draw(st.lists(st.integers(0, n - 1).map(str), max_size=min(n, 6), unique=True))
        return draw(st.lists(indices, max_size=4))
    if kind in (Kind.INTEGER, Kind.NUMBER):
        return [_number_text(draw, spec)]
    if spec.format is not None:
        return [draw(FORMAT_TEXT[spec.format])]
    # Lengths may be astronomical (maxLength 2**63); what is typed stays short.
    low = min(spec.min_length or 0, 60)
    high = min(spec.max_length if spec.max_length is not None else low + 20, low + 40)
    return [draw(st.text(min_size=low, max_size=max(high, low)))]


def field_values(draw: st.DrawFn, spec: Any) -> list[str] | None:
    """What arrives under one field's name: nothing, junk, several values, or a fair try."""
    how = draw(_HOW)
    if how == 6:
        return None
    if how == 7:
        return [draw(nasty_text)]
    if how == 8:
        return [draw(st.sampled_from(NAN_LIKE))]
    if how == 9:  # several values where one is expected (or more where several are)
        return [
            draw(nasty_text) if draw(st.booleans()) else (plausible(draw, spec) or [""])[0]
            for _ in range(draw(_MANY))
        ]
    return plausible(draw, spec)


_STRAY_NAMES = st.sampled_from(["-", "-f", "-f!!", "-fA", "-f____", ""]) | short_nasty_text


def posts_for(draw: st.DrawFn, spec: FormSpec | None, prefix: str) -> dict[str, list[str]]:
    """Form data (name -> values) for one section: its own fields, and sometimes others."""
    data: dict[str, list[str]] = {}
    for field_spec in spec or ():
        values = field_values(draw, field_spec)
        if values is not None:
            data[f"{prefix}-{field_spec.field_name}"] = values
    for _ in range(draw(_EXTRA)):
        data[prefix + draw(_STRAY_NAMES)] = [draw(nasty_text)]
    return data


# -- answers that meet the spec, built from the spec alone --------------------------------------

_CLEAN_TEXT = {
    "email": st.from_regex(r"[a-z0-9]{1,8}@[a-z]{1,10}\.[a-z]{2,5}", fullmatch=True),
    "uri": st.from_regex(r"https://[a-z]{1,10}\.example/[a-z0-9]{0,10}", fullmatch=True),
    "date": st.dates(min_value=dt.date(1000, 1, 1)).map(dt.date.isoformat),
    "date-time": st.datetimes(
        min_value=dt.datetime(1900, 1, 1), max_value=dt.datetime(2100, 1, 1)
    ).map(_iso_seconds),
}


def clean_values(draw: st.DrawFn, spec: Any) -> list[str]:
    """What a person filling ``spec`` in correctly would post (nothing for an unticked box,
    nothing for an optional field left empty)."""
    kind = spec.kind
    if kind is Kind.BOOLEAN:
        return ["on"] if draw(st.booleans()) else []
    if not spec.required and draw(st.integers(0, 3)) == 0:
        return []
    if kind is Kind.SINGLE_SELECT:
        return [str(draw(st.integers(0, len(spec.options) - 1)))]
    if kind is Kind.MULTI_SELECT:
        n = len(spec.options)
        low = max(spec.min_items or 0, 1)
        high = min(spec.max_items if spec.max_items is not None else n, n)
        picked = draw(st.lists(st.integers(0, n - 1), min_size=low, max_size=high, unique=True))
        return [str(i) for i in picked]
    if kind in (Kind.INTEGER, Kind.NUMBER):
        low = spec.minimum if spec.minimum is not None else -1e9
        high = spec.maximum if spec.maximum is not None else 1e9
        if kind is Kind.INTEGER:
            return [str(draw(st.integers(math.ceil(low), math.floor(min(high, low + 1e9)))))]
        high = min(high, low + 1e9)
        return [repr(draw(st.floats(min_value=low, max_value=high, allow_nan=False)))]
    if spec.format is not None:
        return [draw(_CLEAN_TEXT[spec.format])]
    low = max(spec.min_length or 0, 1)
    high = min(spec.max_length if spec.max_length is not None else 40, low + 40)
    return ["x" * draw(st.integers(low, high))]
