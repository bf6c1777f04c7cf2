"""Helpers for the elicitation tests: posting like a browser, reading HTML, checking content.

The content checker is deliberately independent of ``mrtrweb.elicitation``: jsonschema
(Draft 2020-12) for structure and constraints, plus its own format checks, since
jsonschema's ``date-time``/``uri`` checkers need packages this project does not install.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from html.parser import HTMLParser
from typing import Any

import jsonschema
from django.http import QueryDict

from mrtrweb.elicitation import field_name_for

# -- posting -------------------------------------------------------------------------------


def post(prefix: str, answers: Mapping[str, Any]) -> QueryDict:
    """Form data as a browser would send it: ``answers`` maps property names to the raw
    posted string, a list of strings (several values under one name), or None (not sent)."""
    data = QueryDict(mutable=True)
    for prop, raw in answers.items():
        if raw is None:
            continue
        name = f"{prefix}-{field_name_for(prop)}"
        data.setlist(name, list(raw) if isinstance(raw, list | tuple) else [raw])
    return data


def untouched_post(form: Any) -> QueryDict:
    """What a browser posts for ``form`` (unbound) if the person changes nothing."""
    from mrtrweb.elicitation.fields import BooleanField, MultiChoiceField

    data = QueryDict(mutable=True)
    for bound in form:
        value = bound.value()
        if isinstance(bound.field, BooleanField):
            if value:
                data[bound.html_name] = "on"
        elif isinstance(bound.field, MultiChoiceField):
            data.setlist(bound.html_name, [str(v) for v in value or []])
        else:
            data[bound.html_name] = "" if value is None else str(value)
    return data


def index_of(schema: Mapping[str, Any], prop: str, value: str) -> str:
    """The HTML value of option ``value`` of ``prop`` (options are posted by index)."""
    definition = schema["properties"][prop]
    if "oneOf" in definition:
        values = [item["const"] for item in definition["oneOf"]]
    elif "enum" in definition:
        values = definition["enum"]
    elif "anyOf" in definition["items"]:
        values = [item["const"] for item in definition["items"]["anyOf"]]
    else:
        values = definition["items"]["enum"]
    return str(values.index(value))


# -- reading HTML --------------------------------------------------------------------------


class Element:
    def __init__(self, tag: str, attrs: dict[str, str | None]) -> None:
        self.tag = tag
        self.attrs = attrs
        self.text = ""

    def __repr__(self) -> str:
        return f"<{self.tag} {self.attrs}>"


class _Collector(HTMLParser):
    VOID = frozenset({"input", "br", "img", "meta", "link", "hr"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[Element] = []
        self.open: list[Element] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, dict(attrs))
        self.elements.append(element)
        if tag not in self.VOID:
            self.open.append(element)

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.open) - 1, -1, -1):
            if self.open[i].tag == tag:
                del self.open[i:]
                break

    def handle_data(self, data: str) -> None:
        for element in self.open:
            element.text += data


def elements(html: str) -> list[Element]:
    collector = _Collector()
    collector.feed(html)
    collector.close()
    return collector.elements


def by_id(html: str) -> dict[str, Element]:
    return {el.attrs["id"]: el for el in elements(html) if el.attrs.get("id")}


def controls(html: str, name: str) -> list[Element]:
    """The input/select/textarea elements named ``name``."""
    return [
        el
        for el in elements(html)
        if el.tag in ("input", "select", "textarea") and el.attrs.get("name") == name
    ]


# -- checking content ----------------------------------------------------------------------

_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_DATE_TIME = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})"
)
_URI_CHARS = re.compile(r"[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]*")
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")


def format_ok(fmt: str, value: str) -> bool:
    if fmt == "date":
        if not _DATE.fullmatch(value):
            return False
        try:
            dt.date.fromisoformat(value)
        except ValueError:
            return False
        return True
    if fmt == "date-time":
        if not _DATE_TIME.fullmatch(value):
            return False
        try:
            moment = dt.datetime.fromisoformat(value.upper().replace("Z", "+00:00"))
        except ValueError:
            return False
        return moment.tzinfo is not None
    if fmt == "uri":
        scheme, colon, _ = value.partition(":")
        return (
            bool(colon)
            and re.fullmatch(r"[A-Za-z][A-Za-z0-9+\-.]*", scheme) is not None
            and _URI_CHARS.fullmatch(value) is not None
        )
    if fmt == "email":
        return _EMAIL.fullmatch(value) is not None
    raise AssertionError(fmt)


def content_problems(schema: Mapping[str, Any], content: Mapping[str, Any]) -> list[str]:
    """Everything wrong with ``content`` as an answer to ``schema`` (empty list: valid)."""
    problems = [
        error.message
        for error in jsonschema.Draft202012Validator(
            {**schema, "additionalProperties": False}
        ).iter_errors(dict(content))
    ]
    for prop, value in content.items():
        definition = schema["properties"].get(prop, {})
        kind = definition.get("type")
        # jsonschema counts 3.0 as an integer and so does JSON, but we promise a JSON int.
        if kind == "integer" and type(value) is not int:
            problems.append(f"{prop}: {value!r} is not an int")
        if kind == "number" and type(value) not in (int, float):
            problems.append(f"{prop}: {value!r} is not a number")
        fmt = definition.get("format")
        if fmt and isinstance(value, str) and not format_ok(fmt, value):
            problems.append(f"{prop}: {value!r} is not a valid {fmt}")
        if kind == "array" and len(set(value)) != len(value):
            problems.append(f"{prop}: duplicate choices {value!r}")
    return problems
