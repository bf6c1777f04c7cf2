"""Hypothesis strategies: random valid flat schemas, posts for them, and valid answers."""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

from hypothesis import assume
from hypothesis import strategies as st

from tests.elicitation.support import post

FORMATS = [None, "email", "uri", "date", "date-time"]

# JSON strings may carry any code point, lone surrogates included.
any_text = st.text(alphabet=st.characters(codec=None, categories=None), max_size=24)
maybe_text = st.none() | any_text
finite_floats = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e12, max_value=1e12)
some_numbers = st.integers(-(10**6), 10**6) | finite_floats


@st.composite
def annotated(draw: st.DrawFn, definition: dict[str, Any]) -> dict[str, Any]:
    for key in ("title", "description"):
        value = draw(maybe_text)
        if value is not None:
            definition[key] = value
    return definition


def format_values(fmt: str | None) -> st.SearchStrategy[str]:
    if fmt == "email":
        return st.from_regex(
            r"[a-z0-9]{1,8}(\.[a-z0-9+]{1,5})?@[a-z]{1,10}\.[a-z]{2,5}", fullmatch=True
        )
    if fmt == "uri":
        return st.from_regex(
            r"(https|urn|mailto):[a-z0-9/._~?=&-]{1,20}(#[a-z0-9]*)?(%[0-9A-F]{2})?",
            fullmatch=True,
        )
    if fmt == "date":
        return st.dates().map(dt.date.isoformat)
    if fmt == "date-time":
        return st.datetimes(
            min_value=dt.datetime(1900, 1, 1), max_value=dt.datetime(2200, 1, 1)
        ).map(lambda moment: moment.replace(microsecond=0).isoformat() + "Z")
    return st.text(max_size=30)


@st.composite
def string_definitions(draw: st.DrawFn) -> dict[str, Any]:
    definition: dict[str, Any] = {"type": "string"}
    fmt = draw(st.sampled_from(FORMATS))
    if fmt is not None:
        definition["format"] = fmt
    low = draw(st.none() | st.integers(0, 8))
    high = draw(st.none() | st.integers(low or 0, 40))
    if low is not None:
        definition["minLength"] = low
    if high is not None:
        definition["maxLength"] = high
    default = draw(st.none() | format_values(fmt) | any_text)
    if default is not None:
        definition["default"] = default
    return draw(annotated(definition))


@st.composite
def number_definitions(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["number", "integer"]))
    definition: dict[str, Any] = {"type": kind}
    low = draw(st.none() | some_numbers)
    high = draw(st.none() | some_numbers)
    if low is not None and high is not None:
        low, high = min(low, high), max(low, high)
        if kind == "integer" and math.ceil(low) > math.floor(high):
            high = math.ceil(low)
    if low is not None:
        definition["minimum"] = low
    if high is not None:
        definition["maximum"] = high
    default = draw(st.none() | some_numbers)
    if default is not None:
        definition["default"] = default
    return draw(annotated(definition))


@st.composite
def boolean_definitions(draw: st.DrawFn) -> dict[str, Any]:
    definition: dict[str, Any] = {"type": "boolean"}
    default = draw(st.none() | st.booleans())
    if default is not None:
        definition["default"] = default
    return draw(annotated(definition))


option_values = st.lists(any_text, min_size=1, max_size=8, unique=True)


@st.composite
def single_definitions(draw: st.DrawFn) -> dict[str, Any]:
    values = draw(option_values)
    titles = draw(st.lists(any_text, min_size=len(values), max_size=len(values)))
    style = draw(st.sampled_from(["untitled", "titled", "legacy"]))
    definition: dict[str, Any] = {"type": "string"}
    if style == "untitled":
        definition["enum"] = values
    elif style == "titled":
        definition["oneOf"] = [
            {"const": v, "title": t} for v, t in zip(values, titles, strict=True)
        ]
    else:
        definition["enum"] = values
        definition["enumNames"] = titles
    default = draw(st.none() | st.sampled_from(values) | any_text)
    if default is not None:
        definition["default"] = default
    return draw(annotated(definition))


@st.composite
def multi_definitions(draw: st.DrawFn) -> dict[str, Any]:
    values = draw(option_values)
    titled = draw(st.booleans())
    if titled:
        titles = draw(st.lists(any_text, min_size=len(values), max_size=len(values)))
        items: dict[str, Any] = {
            "anyOf": [{"const": v, "title": t} for v, t in zip(values, titles, strict=True)]
        }
    else:
        items = {"type": "string", "enum": values}
    definition: dict[str, Any] = {"type": "array", "items": items}
    low = draw(st.none() | st.integers(0, len(values)))
    high = draw(st.none() | st.integers(low or 0, len(values) + 2))
    if low is not None:
        definition["minItems"] = low
    if high is not None:
        definition["maxItems"] = high
    default = draw(
        st.none() | st.lists(st.sampled_from(values), unique=True) | st.lists(any_text, max_size=3)
    )
    if default is not None:
        definition["default"] = default
    return draw(annotated(definition))


property_definitions = st.one_of(
    string_definitions(),
    number_definitions(),
    boolean_definitions(),
    single_definitions(),
    multi_definitions(),
)


@st.composite
def schemas(draw: st.DrawFn) -> dict[str, Any]:
    properties = draw(st.dictionaries(any_text, property_definitions, max_size=6))
    required = (
        draw(st.lists(st.sampled_from(sorted(properties)), unique=True)) if properties else []
    )
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required or draw(st.booleans()):
        schema["required"] = required
    if draw(st.booleans()):
        schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return schema


def _options(definition: dict[str, Any]) -> list[str]:
    if "oneOf" in definition:
        return [item["const"] for item in definition["oneOf"]]
    if "enum" in definition:
        return definition["enum"]
    items = definition["items"]
    return [item["const"] for item in items["anyOf"]] if "anyOf" in items else items["enum"]


def raw_posts_for(definition: dict[str, Any]) -> st.SearchStrategy[Any]:
    """What might arrive for one field: nothing, junk, or something plausible."""
    junk = st.none() | any_text
    kind = definition["type"]
    if kind == "string" and "enum" not in definition and "oneOf" not in definition:
        fmt = definition.get("format")
        if fmt == "date-time":
            plausible = st.datetimes().map(lambda m: m.strftime("%Y-%m-%dT%H:%M"))
        else:
            plausible = format_values(fmt)
        return junk | plausible
    if kind in ("number", "integer"):
        return junk | some_numbers.map(repr) | st.integers().map(str)
    if kind == "boolean":
        return junk | st.just("on")
    indices = st.integers(-1, len(_options(definition)) + 1).map(str)
    if kind == "array":
        return junk | st.lists(indices | any_text, max_size=5)
    return junk | indices


@st.composite
def random_posts(draw: st.DrawFn, schema: dict[str, Any], prefix: str) -> Any:
    answers = {
        prop: draw(raw_posts_for(definition)) for prop, definition in schema["properties"].items()
    }
    return post(prefix, answers)


# -- valid answers, built independently of the code under test ------------------------------


def _plain_text(low: int, high: float) -> st.SearchStrategy[str]:
    """Text a person could type that survives stripping: no edge whitespace, no NUL."""
    top = int(min(high, low + 20))
    return st.text(min_size=max(low, 1), max_size=max(top, 1)).filter(
        lambda s: s == s.strip() and "\x00" not in s
    )


@st.composite
def valid_answers(draw: st.DrawFn, schema: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(answers to post, the content the form must produce), for the form's tz = UTC."""
    answers: dict[str, Any] = {}
    content: dict[str, Any] = {}
    required = set(schema.get("required", []))
    for prop, definition in schema["properties"].items():
        kind = definition["type"]
        if kind == "boolean":
            value = draw(st.booleans())
            answers[prop] = "on" if value else None
            content[prop] = value
            continue
        if prop not in required and draw(st.booleans()):
            continue  # left empty
        if kind == "array":
            options = _options(definition)
            low = definition.get("minItems", 0)
            high = min(definition.get("maxItems", len(options)), len(options))
            chosen = draw(
                st.lists(
                    st.sampled_from(range(len(options))), unique=True, min_size=low, max_size=high
                )
            )
            if not chosen and prop not in required:
                continue
            answers[prop] = [str(i) for i in chosen]
            content[prop] = [options[i] for i in sorted(chosen)]
        elif "enum" in definition or "oneOf" in definition:
            options = _options(definition)
            i = draw(st.integers(0, len(options) - 1))
            answers[prop] = str(i)
            content[prop] = options[i]
        elif kind == "integer":
            low, high = definition.get("minimum"), definition.get("maximum")
            if low is not None:
                low = math.ceil(low)
            if high is not None:
                high = math.floor(high)
            value = draw(st.integers(low, high))
            answers[prop] = str(value)
            content[prop] = value
        elif kind == "number":
            value = draw(
                st.floats(
                    min_value=definition.get("minimum", -1e12),
                    max_value=definition.get("maximum", 1e12),
                    allow_nan=False,
                    allow_infinity=False,
                )
            )
            answers[prop] = repr(value)
            content[prop] = value
        else:
            fmt = definition.get("format")
            low = definition.get("minLength", 0)
            high = definition.get("maxLength", math.inf)
            if fmt == "date-time":
                moment = draw(st.datetimes(min_value=dt.datetime(1900, 1, 1)))
                moment = moment.replace(microsecond=0)
                answers[prop] = moment.isoformat()
                text = moment.isoformat() + "+00:00"
            elif fmt is None:
                if high < 1:
                    assume(prop not in required)  # only "" fits, and "" means no answer
                    continue
                text = answers[prop] = draw(_plain_text(low, high))
            else:
                text = answers[prop] = draw(format_values(fmt))
            if not low <= len(text) <= high:
                assume(prop not in required)
                answers.pop(prop)
                continue
            content[prop] = text
    return answers, content
