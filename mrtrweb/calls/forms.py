"""The round page's form: every input request of a round as a section, and the answers.

The forms for starting a call are in :mod:`mrtrweb.starting`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.forms.utils import ErrorDict

from mrtrweb.elicitation import (
    ElicitationForm,
    InvalidElicitation,
    UnsupportedSchema,
    UrlInfo,
    UrlRequest,
    build_form,
    classify,
    content_from,
    describe_url,
    initial_from_content,
    parse_request,
    prefix_for_key,
)
from mrtrweb.elicitation.requests import ELICIT_METHOD
from mrtrweb.elicitation.schema import MAX_FIELDS, MAX_FORM_OPTIONS

from .models import Round

# -- answering a round ----------------------------------------------------------------------------


# At most this many questions in one round are shown (a server's 5,000 took 6 s to render,
# and were more fields than Django accepts in one post, so they could not even be cancelled).
MAX_QUESTIONS = 20


def _too_big(why: str) -> str:
    return (
        f"{why}: one page shows at most {MAX_QUESTIONS} questions, {MAX_FIELDS} fields and "
        f"{MAX_FORM_OPTIONS} options in all."
    )


@dataclass
class Section:
    """One input request of a round, as the round page shows it."""

    key: str
    prefix: str
    method: str
    mode: str  # form, url, invalid (a schema or request we cannot render), unsupported (kind)
    message: str = ""
    form: ElicitationForm | None = None
    url: UrlInfo | None = None
    consented: bool = False
    error: str = ""

    @property
    def can_open(self) -> bool:
        return self.mode == "url" and self.url is not None and self.url.openable

    @property
    def show_link(self) -> bool:
        return self.can_open and self.consented


class RoundAnswers:
    """Every input request of a round as sections of one form, and the answers out of them.

    ``consented`` holds the prefixes of URL-mode requests the person agreed to open.
    A round with a request we cannot render or answer is never half-rendered: the sections
    say why, and only Decline/Cancel (or Abandon, for kinds we did not declare) remain.
    """

    def __init__(
        self,
        round: Round,
        *,
        data: Mapping[str, Any] | None = None,
        saved: Mapping[str, Mapping[str, Any]] | None = None,
        consented: frozenset[str] | set[str] = frozenset(),
        tz: dt.tzinfo | None = None,
    ) -> None:
        self.round = round
        self.sections: list[Section] = []
        saved = saved or {}
        requests = list(round.requests())
        # What one page may show in all, whatever the server asked: beyond it the questions
        # are not rendered, and only Decline or Cancel answer them (see _too_big).
        fields_left, options_left = MAX_FIELDS, MAX_FORM_OPTIONS
        for key, request in requests:
            prefix = prefix_for_key(key)
            method = request.get("method", "") if isinstance(request, Mapping) else ""
            section = Section(key=key, prefix=prefix, method=str(method), mode="invalid")
            if len(requests) > MAX_QUESTIONS:
                # Said once, above the first: the page stays small however many there are.
                if not self.sections:
                    section.error = _too_big(f"The server asked {len(requests)} questions at once")
                self.sections.append(section)
                continue
            params = request.get("params") if isinstance(request, Mapping) else None
            if isinstance(params, Mapping) and isinstance(params.get("message"), str):
                section.message = params["message"]
            if method != ELICIT_METHOD:
                section.mode = "unsupported"
                section.error = f"This client cannot answer requests of kind {method or '?'}."
                self.sections.append(section)
                continue
            try:
                parsed = parse_request(request)
            except InvalidElicitation as exc:
                section.error = f"The server sent a malformed question: {exc}"
                self.sections.append(section)
                continue
            section.message = parsed.message
            if isinstance(parsed, UrlRequest):
                section.mode = "url"
                section.url = describe_url(parsed.url)
                section.consented = prefix in consented
            else:
                try:
                    spec = classify(parsed.schema)
                    fields_left -= len(spec)
                    options_left -= sum(len(field.options) for field in spec)
                    if fields_left < 0 or options_left < 0:
                        section.error = _too_big("With this question the round asks too much")
                        self.sections.append(section)
                        continue
                    initial = initial_from_content(spec, saved[key]) if key in saved else None
                    section.form = build_form(
                        spec, prefix=prefix, data=data, initial=initial, tz=tz
                    )
                    section.mode = "form"
                except UnsupportedSchema as exc:
                    section.error = f"This question uses a form mrtrweb cannot show: {exc}"
            self.sections.append(section)

    @property
    def unsupported(self) -> bool:
        return bool(self.round.unsupported_reason) or any(
            s.mode == "unsupported" for s in self.sections
        )

    @property
    def answerable(self) -> bool:
        """Whether Decline/Cancel can be sent at all."""
        return self.round.is_pending and not self.unsupported

    @property
    def renderable(self) -> bool:
        return all(s.mode in ("form", "url") for s in self.sections)

    @property
    def awaiting_consent(self) -> list[Section]:
        return [s for s in self.sections if s.mode == "url" and not s.consented]

    @property
    def can_accept(self) -> bool:
        return (
            self.answerable
            and self.renderable
            and all(s.can_open and s.consented for s in self.sections if s.mode == "url")
        )

    @property
    def has_forms(self) -> bool:
        return any(s.mode == "form" for s in self.sections)

    @property
    def accept_label(self) -> str:
        return "Submit" if self.has_forms else "I've finished"

    def section_for_prefix(self, prefix: str) -> Section | None:
        for section in self.sections:
            if section.prefix == prefix:
                return section
        return None

    def is_valid(self) -> bool:
        # Validate every form (not just up to the first bad one) so all errors show at once.
        results = [s.form.is_valid() for s in self.sections if s.form is not None]
        return self.can_accept and all(results)

    def quiet(self) -> None:
        """Keep typed values but show no errors (after a consent click, say)."""
        for section in self.sections:
            if section.form is not None and section.form.is_bound:
                section.form._errors = ErrorDict()

    def accepted(self) -> dict[str, dict[str, Any]]:
        responses: dict[str, dict[str, Any]] = {}
        for section in self.sections:
            if section.form is not None:
                responses[section.key] = {
                    "action": "accept",
                    "content": dict(content_from(section.form)),
                }
            else:
                responses[section.key] = {"action": "accept"}
        return responses

    def refused(self, action: str) -> dict[str, dict[str, Any]]:
        """Decline or cancel sends no content, for every key."""
        return {section.key: {"action": action} for section in self.sections}
