"""The questions of a round, read once from the stored ``inputRequests``.

Every reader of a round (its page, the call page, the inbox, the API, the emails, the audit
trail) gets these typed objects instead of walking the JSON itself. Each request becomes one
of three things:

- :class:`FormQuestion`: a well-formed form-mode ``elicitation/create``; its schema is
  classified on first use (``spec``, or ``problem`` when it is outside the vocabulary);
- :class:`UrlQuestion`: a well-formed URL-mode one; ``info`` describes its URL (never fetched);
- :class:`UnsupportedQuestion`: anything else, a kind this client does not answer
  (``malformed`` False) or an elicitation it cannot read (``malformed`` True). What could be
  read of it (method, mode, message) is kept, so a person still sees what was asked.

The requests are checked with the ``mcp_types`` models (see ``parse_request``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar

from mrtrweb.elicitation.requests import (
    ELICIT_METHOD,
    FormRequest,
    InvalidElicitation,
    parse_request,
)
from mrtrweb.elicitation.schema import FormSpec, UnsupportedSchema, classify
from mrtrweb.elicitation.url_mode import UrlInfo, describe_url


@dataclass(frozen=True)
class FormQuestion:
    key: str
    message: str
    schema: dict[str, Any] = field(repr=False)  # the requestedSchema as sent

    method: ClassVar[str] = ELICIT_METHOD
    mode: ClassVar[str] = "form"

    @cached_property
    def _classified(self) -> FormSpec | UnsupportedSchema:
        try:
            return classify(self.schema)
        except UnsupportedSchema as exc:
            return exc

    @property
    def spec(self) -> FormSpec | None:
        """The classified schema, or None when it is outside the vocabulary (see ``problem``)."""
        classified = self._classified
        return classified if isinstance(classified, FormSpec) else None

    @property
    def problem(self) -> UnsupportedSchema | None:
        classified = self._classified
        return classified if isinstance(classified, UnsupportedSchema) else None


@dataclass(frozen=True)
class UrlQuestion:
    key: str
    message: str
    url: str  # exactly as sent: show ``info``, never fetch it

    method: ClassVar[str] = ELICIT_METHOD
    mode: ClassVar[str] = "url"

    @cached_property
    def info(self) -> UrlInfo:
        return describe_url(self.url)


@dataclass(frozen=True)
class UnsupportedQuestion:
    key: str
    method: str  # "" when the server sent none (or not a string)
    mode: str  # an elicitation's mode as sent ("form" when absent), "" for other kinds
    message: str  # params.message when it is a string, else ""
    reason: str  # why it cannot be answered
    malformed: bool  # an elicitation/create we could not read, rather than another kind
    url: str = ""  # params.url of a URL-mode elicitation, when it is a string


Question = FormQuestion | UrlQuestion | UnsupportedQuestion


def read_question(key: str, request: Any) -> Question:
    """One input request as a typed question; never raises."""
    raw = request if isinstance(request, Mapping) else {}
    method = raw.get("method")
    method = method if isinstance(method, str) else ""
    params = raw.get("params")
    params = params if isinstance(params, Mapping) else {}
    if method != ELICIT_METHOD:
        return UnsupportedQuestion(
            key=key,
            method=method,
            mode="",
            message=_text(params.get("message")),
            reason=f"This client cannot answer requests of kind {method or '?'}.",
            malformed=False,
        )
    try:
        parsed = parse_request(raw)
    except InvalidElicitation as exc:
        mode = params.get("mode", "form")
        return UnsupportedQuestion(
            key=key,
            method=method,
            mode=mode if isinstance(mode, str) else "",
            message=_text(params.get("message")),
            reason=str(exc),
            malformed=True,
            url=_text(params.get("url")) if mode == "url" else "",
        )
    if isinstance(parsed, FormRequest):
        return FormQuestion(key=key, message=parsed.message, schema=parsed.schema)
    return UrlQuestion(key=key, message=parsed.message, url=parsed.url)


def read_questions(input_requests: Any) -> tuple[Question, ...]:
    """Every input request of ``input_requests`` (a round's stored JSON), in the server's
    order; anything but a JSON object has none."""
    if not isinstance(input_requests, Mapping):
        return ()
    return tuple(read_question(str(key), request) for key, request in input_requests.items())


def summary(questions: tuple[Question, ...] | list[Question]) -> str:
    """The messages, one a line (blank ones left out): what the admins' search looks in."""
    return "\n".join(q.message.strip() for q in questions if q.message.strip())


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""
