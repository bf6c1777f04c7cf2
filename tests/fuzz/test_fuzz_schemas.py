"""Thousands of generated input requests through parse → form → render → clean.

Each example is a round of one to four input requests (valid, borderline or hostile, see
``strategies``) and generated form data for them. Every request goes through the elicitation
pipeline one step at a time (``parse_request``, ``classify``, ``build_form``, ``is_valid``,
``content_from``), and the whole round through the round page's own ``RoundAnswers`` and
template (``calls/round.html``, rendered by the view's ``_render_round``). Nothing may raise
but the product's refusals (``InvalidElicitation``, ``UnsupportedSchema``), each with a
message that the page then shows; every rendered page keeps server text inert; every valid
form gives content that an independent JSON Schema validator accepts.
"""

from __future__ import annotations

import datetime as dt
import json
from html.parser import HTMLParser
from typing import Any

import pytest
from django.http import QueryDict
from django.test import RequestFactory
from hypothesis import given
from hypothesis import strategies as st

from mrtrweb.calls.pages.views import _render_round
from mrtrweb.calls.presenting.rounds import RoundAnswers
from mrtrweb.elicitation import (
    FormRequest,
    InvalidElicitation,
    UnsupportedSchema,
    build_form,
    classify,
    content_from,
    parse_request,
    prefix_for_key,
    value_problem,
)
from tests.dashboard.support import make_connection, make_end_user, make_round
from tests.elicitation.support import content_problems
from tests.fuzz.strategies import XSS_MARK, Generated, input_requests, nasty_text, posts_for
from tests.fuzz.support import fuzz
from tests.fuzz.tally import count, counting_errors, declare

# The run takes half a minute on an idle machine; far longer when the machine is shared.
pytestmark = [pytest.mark.django_db, pytest.mark.timeout(600)]

SUBJECT = "input requests"
UTC = dt.UTC
# Attributes whose value a browser may follow or run.
URL_ATTRIBUTES = frozenset({"href", "src", "action", "formaction", "srcdoc", "data"})


class LiveMarkup(HTMLParser):
    """Collects every place where ``XSS_MARK`` would be live: a tag of its own, an attribute
    name, an event handler, a script body, a URL attribute."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.problems: list[str] = []
        self.scripts: list[dict[str, str | None]] = []
        self.text: list[str] = []  # the page's text, as a browser reads it
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if XSS_MARK in tag:
            self.problems.append(f"tag <{tag}>")
        if tag == "script":
            self.scripts.append(dict(attrs))
            self._in_script = True
        for name, value in attrs:
            if XSS_MARK in name or name.startswith("on"):
                self.problems.append(f"attribute {name!r} on <{tag}>")
            if name in URL_ATTRIBUTES and value and XSS_MARK in value:
                self.problems.append(f"{name}={value[:80]!r} on <{tag}>")

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_script = False

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._in_script and XSS_MARK in data:
            self.problems.append(f"script body {data[:80]!r}")

    def handle_comment(self, data: str) -> None:
        if XSS_MARK in data:
            self.problems.append("a comment carries server text unescaped")


def inert(html: str, scripts: list[dict[str, str | None]]) -> str:
    """Server text stays text: no live markup, and exactly the page's own scripts. Returns
    the page's text."""
    parser = LiveMarkup()
    parser.feed(html)
    parser.close()
    assert parser.problems == [], parser.problems[:5]
    assert parser.scripts == scripts, parser.scripts
    assert f"<script>{XSS_MARK}" not in html.lower()
    return "".join(parser.text)


class Page:
    """The round page for rounds that are only ever held in memory: one saved round (the
    template reads its call, routing and deadline) whose ``input_requests`` each example
    replaces without saving."""

    def __init__(self) -> None:
        self.person = make_end_user("eve")
        connection = make_connection()
        self.round = make_round(connection=connection, starter=self.person)
        self.request = RequestFactory().get(self.round.get_absolute_url())
        self.request.user = self.person
        self.scripts = self._scripts(self.render({}, None))

    def render(self, requests: dict[str, Any], data: QueryDict | None) -> str:
        self.round.input_requests = requests
        answers = RoundAnswers(self.round, data=data, tz=UTC)
        response = _render_round(self.request, self.round, answers)
        self.answers = answers
        return response.content.decode()

    @staticmethod
    def _scripts(html: str) -> list[dict[str, str | None]]:
        parser = LiveMarkup()
        parser.feed(html)
        return parser.scripts


def through_the_pipeline(generated: Generated, key: str, data: QueryDict) -> tuple[str, str]:
    """One input request, step by step: the outcome counted, and the refusal's message."""
    try:
        parsed = parse_request(generated.request)
    except InvalidElicitation as exc:
        assert str(exc).strip(), "a refusal without a message"
        return "refused", str(exc)
    if not isinstance(parsed, FormRequest):
        return "rendered", ""  # URL mode: the page shows it (checked below)
    try:
        spec = classify(parsed.schema)
    except UnsupportedSchema as exc:
        assert str(exc).strip() and exc.reason.strip(), "a refusal without a message"
        return "refused", str(exc)
    form = build_form(spec, prefix=prefix_for_key(key), data=data, tz=UTC)
    if not form.is_valid():
        with pytest.raises(ValueError):
            content_from(form)
        return "rendered", ""
    content = content_from(form)
    json.dumps(content, allow_nan=False)  # sendable as it is
    assert set(spec.required) <= content.keys() <= {f.prop for f in spec}
    for field_spec in spec:
        if field_spec.prop in content:
            assert value_problem(field_spec, content[field_spec.prop]) is None
    assert content_problems(parsed.schema, content) == [], content
    count(SUBJECT, "answers accepted")
    return "rendered", ""


def as_query(data: dict[str, list[str]]) -> QueryDict:
    query = QueryDict(mutable=True)
    for name, values in data.items():
        query.setlist(name, values)
    return query


@pytest.fixture(scope="module")
def _declared() -> None:
    declare(SUBJECT, ("rendered", "refused"), extra=("answers accepted",))


_QUESTIONS = st.lists(input_requests, min_size=1, max_size=4)
_KEYS = {n: st.lists(nasty_text, min_size=n, max_size=n, unique=True) for n in range(1, 5)}


@st.composite
def rounds(draw: st.DrawFn) -> tuple[list[tuple[str, Generated]], QueryDict]:
    """One to four input requests under distinct keys, and form data for all of them."""
    generated = draw(_QUESTIONS)
    keys = draw(_KEYS[len(generated)])
    posted: dict[str, list[str]] = {}
    for key, g in zip(keys, generated, strict=True):
        posted.update(posts_for(draw, _spec_or_none(g.request), prefix_for_key(key)))
    return list(zip(keys, generated, strict=True)), as_query(posted)


@fuzz(900)
@given(example=rounds())
def test_input_requests_render_or_are_refused_cleanly(example: Any, _declared: None, page_: Page):
    questions, query = example
    with counting_errors(SUBJECT):
        outcomes = []
        for key, g in questions:
            outcome, why = through_the_pipeline(g, key, query)
            if g.expect == "render":
                assert outcome == "rendered", (why, g.request)
            elif g.expect == "refuse":
                assert outcome == "refused", g.request
            outcomes.append(outcome)

        html = page_.render({key: g.request for key, g in questions}, query)
        text = inert(html, page_.scripts)
        answers = page_.answers
        if answers.unsupported:
            # A kind of request we never declared: the page says so and offers only Abandon.
            assert "mrtrweb cannot answer" in text and "(unsupported)" in text
        for section, outcome in zip(answers.sections, outcomes, strict=True):
            if outcome == "refused":
                assert section.mode in ("invalid", "unsupported"), section
                assert section.error.strip()
                if not answers.unsupported:
                    # Shown beside the question (escaped; compared as a browser reads it).
                    assert section.error.strip()[:40] in text, section.error
            else:
                assert section.mode in ("form", "url"), section
                if section.form is not None and not answers.unsupported:
                    for bound in section.form:
                        assert f'name="{bound.html_name}"' in html
        if answers.is_valid():
            json.dumps(answers.accepted(), allow_nan=False)
        for outcome in outcomes:
            count(SUBJECT, outcome)


def _spec_or_none(request: Any) -> Any:
    try:
        parsed = parse_request(request)
        return classify(parsed.schema) if isinstance(parsed, FormRequest) else None
    except (InvalidElicitation, UnsupportedSchema):
        return None


@pytest.fixture
def page_(db: Any) -> Page:
    return Page()
