"""Thousands of generated posts to the real round page.

The rounds are parked without a server (``tests.dashboard.support.make_round``, then their
questions set), and delivery on answer is off (``MRTRWEB_DELIVER_ON_ANSWER``, as in every
in-process test): an accepted answer is stored with its delivery task and goes no further.
Posts carry random field names, values and types, several values under one name, fields
missing or extra, huge values and too many fields, as multipart or urlencoded (with odd or
invalid bytes and charsets) or with a content type the page does not read.

For every post: never a 5xx; a refusal re-renders the round with a message and keeps what
was typed; a post that gets through leaves the round submitted (or abandoned) exactly once,
and the same post again is told the round was already answered, changing nothing.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote_from_bytes

import pytest
from django.http.multipartparser import MAX_TOTAL_HEADER_SIZE
from django.test import Client
from hypothesis import given
from hypothesis import strategies as st

from mrtrweb.calls.models import Round
from mrtrweb.calls.presenting.rounds import RoundAnswers
from mrtrweb.elicitation.fields import BooleanField, MultiChoiceField, SingleChoiceField
from tests.dashboard.support import client_for, make_connection, make_end_user
from tests.elicitation.support import elements
from tests.fuzz.rounds import (
    ROUNDS,
    Pool,
    answered_events,
    check_each_answered_once,
    deliveries,
    sections,
)
from tests.fuzz.strategies import XSS_MARK, clean_values, nasty_text, posts_for
from tests.fuzz.support import fuzz
from tests.fuzz.tally import count, counting_errors, declare

pytestmark = [pytest.mark.django_db, pytest.mark.timeout(600)]

SUBJECT = "round posts"
OUTCOMES = ("answered", "abandoned", "consented", "refused", "refused by Django", "answered again")


@dataclass
class Post:
    round_kind: str
    encoding: str  # multipart, urlencoded, raw-bytes, json, text
    fields: list[tuple[str, str]]  # in order; a name may repeat
    charset: str = ""
    huge: str = ""  # "", "body" (past DATA_UPLOAD_MAX_MEMORY_SIZE) or "fields" (too many)

    @property
    def refused_by_django(self) -> bool:
        """Django answers 400 before the view: a body or field count past its limits, or a
        urlencoded body declared in a charset other than UTF-8 (no browser sends one)."""
        if self.huge:
            return True
        if self.encoding == "multipart":
            # Each part's headers must fit in Django's 1,024 bytes (our pages post urlencoded).
            part = 'Content-Disposition: form-data; name=""\r\n\r\n'
            return any(
                len(part) + len(_multipart_name(name).encode()) > MAX_TOTAL_HEADER_SIZE
                for name, _ in self.fields
            )
        if self.encoding not in ("urlencoded", "raw-bytes") or not self.charset:
            return False
        name = self.charset.split(";")[0]
        try:
            return codecs.lookup(name).name != "utf-8"
        except LookupError:
            return False  # an unknown charset is ignored


ACTIONS = st.sampled_from(["accept", "accept", "accept", "decline", "cancel", "abandon"])
CHARSETS = st.sampled_from(["", "utf-8", "latin-1", "utf-16", "bogus", "UTF-8;x=1"])
ENCODINGS = st.sampled_from(
    ["urlencoded", "multipart", "urlencoded", "multipart", "raw-bytes", "json", "text"]
)


@st.composite
def posts(draw: st.DrawFn) -> Post:
    kind = draw(st.sampled_from(sorted(ROUNDS)))
    fields: list[tuple[str, str]] = []
    # Hypothesis draws the low end of a range most, so the common case comes first.
    clean = draw(st.integers(0, 2)) == 0  # many are filled in as a careful person would
    for section in sections(kind):
        prefix, spec = section.prefix, section.form.spec if section.form is not None else None
        if clean and spec is not None:
            for field_spec in spec:
                name = f"{prefix}-{field_spec.field_name}"
                fields += [(name, value) for value in clean_values(draw, field_spec)]
            continue
        if draw(st.integers(0, 9)) == 9:
            continue  # the whole section missing
        for name, values in posts_for(draw, spec, prefix).items():
            fields += [(name, value) for value in values]
        if spec is None and draw(st.booleans()):
            fields.append(("consent", prefix))  # agreeing to a link (or to what is no link)
    how = draw(st.integers(0, 9))
    if how < 7:
        fields.append(("action", draw(ACTIONS)))
    elif how == 7:
        fields.append(("action", draw(nasty_text)))
    elif how == 8:
        fields += [("action", a) for a in draw(st.lists(ACTIONS, min_size=2, max_size=3))]
    if draw(st.integers(0, 19)) == 19:
        fields.append(("consent", draw(nasty_text)))
    if draw(st.booleans()):
        fields.append(("csrfmiddlewaretoken", draw(nasty_text)))
    draw(st.randoms()).shuffle(fields)
    charset = draw(CHARSETS) if draw(st.integers(0, 3)) == 3 else ""
    post = Post(kind, draw(ENCODINGS), fields, charset=charset)
    size = draw(st.integers(0, 59))
    if size == 59:
        post.huge = "body"
    elif size == 58:
        post.huge = "fields"
    elif size > 52 and fields:
        # One value far longer than anyone types, yet under Django's body limit.
        i = draw(st.integers(0, len(fields) - 1))
        name, _ = fields[i]
        fields[i] = (name, ("x" * draw(st.integers(10_000, 400_000))) + XSS_MARK)
    return post


def _multipart_name(name: str) -> str:
    """A field name as browsers write it in a multipart body (HTML's escaping)."""
    text = _browser_text(name)
    return text.replace('"', "%22").replace("\r", "%0D").replace("\n", "%0A")


def _browser_text(value: str) -> str:
    """What a browser could send: it has no way to encode a lone surrogate."""
    return value.encode("utf-8", "replace").decode("utf-8")


def send(client: Client, url: str, post: Post) -> Any:
    fields = list(post.fields)
    if post.huge == "body":
        fields.append(("notes", "y" * 3_000_000))
    elif post.huge == "fields":
        fields += [(f"f{i}", "1") for i in range(1_100)]
    charset = f"; charset={post.charset}" if post.charset else ""
    if post.encoding == "multipart":
        data: dict[str, list[str]] = {}
        for name, value in fields:
            data.setdefault(_multipart_name(name), []).append(_browser_text(value))
        return client.post(url, data)
    if post.encoding in ("urlencoded", "raw-bytes"):
        # raw-bytes: encoded as UTF-8 with surrogates passed through, so the body holds byte
        # sequences that are not UTF-8 at all.
        errors = "surrogatepass" if post.encoding == "raw-bytes" else "replace"
        body = b"&".join(
            quote_from_bytes(n.encode("utf-8", errors)).encode()
            + b"="
            + quote_from_bytes(v.encode("utf-8", errors)).encode()
            for n, v in fields
        )
        content_type = "application/x-www-form-urlencoded"
    elif post.encoding == "json":
        body = json.dumps(dict(fields)).encode()
        content_type = "application/json"
    else:
        body = "\n".join(f"{n}={v}" for n, v in fields).encode("utf-8", "replace")
        content_type = "text/plain"
    # generic() sends the bytes as they are; post() would re-encode them in the charset.
    return client.generic("POST", url, body, content_type=content_type + charset)


def kept(response: Any, answers: RoundAnswers) -> None:
    """Each value typed into a text-like field is back in its control, and each choice made
    is still checked."""
    posted = response.wsgi_request.POST
    html = response.content.decode()
    by_name: dict[str, list[Any]] = {}
    for element in elements(html):
        name = element.attrs.get("name")
        if name:
            by_name.setdefault(name, []).append(element)
    for section in answers.sections:
        if section.form is None:
            continue
        for bound in section.form:
            name = bound.html_name
            controls = by_name.get(name, [])
            assert controls, f"the control {name} is missing"
            value = posted.get(name)
            if value is None:
                continue
            field_ = bound.field
            if isinstance(field_, BooleanField):
                checked = "checked" in controls[0].attrs
                understood = field_.to_wire(field_.widget.value_from_datadict(posted, {}, name))
                assert checked == understood, (name, value)
            elif isinstance(field_, SingleChoiceField | MultiChoiceField):
                chosen = {
                    v
                    for v in posted.getlist(name)
                    if v.isdigit() and int(v) < len(field_.spec.options) and str(int(v)) == v
                }
                if isinstance(field_, SingleChoiceField):
                    chosen = {value} & chosen
                marked = {
                    c.attrs.get("value")
                    for c in controls
                    if "checked" in c.attrs or "selected" in c.attrs
                }
                if controls[0].tag == "select":
                    marked = {
                        o.attrs.get("value")
                        for o in elements(html)
                        if o.tag == "option"
                        and "selected" in o.attrs
                        and o.attrs.get("value")
                        in {str(i) for i in range(len(field_.spec.options))}
                    }
                assert chosen <= marked, (name, posted.getlist(name), marked)
            elif value.strip():
                control = controls[0]
                shown = control.attrs.get("value") if control.tag == "input" else control.text
                if control.tag == "textarea" and shown.startswith("\n"):
                    shown = shown[1:]
                # As the field shows a value (a date-time typed with an offset comes back as
                # the same instant in local time: datetime-local has no offset).
                expected = field_.prepare_value(value)
                assert shown == expected, (name, value[:80], (shown or "")[:80])


@pytest.fixture(scope="module")
def _declared() -> None:
    declare(SUBJECT, OUTCOMES)


@pytest.fixture
def pool(db: Any) -> Iterator[Pool]:
    pool = Pool(person=make_end_user("eve"), connection=make_connection())
    yield pool
    check_each_answered_once(pool)


@pytest.fixture
def web(pool: Pool) -> Client:
    return client_for(pool.person)


@fuzz(1000)
@given(data=st.data())
def test_posts_to_the_round_page_never_fail_and_never_answer_twice(
    data: Any, _declared: None, pool: Pool, web: Client
):
    post = data.draw(posts(), label="post")
    with counting_errors(SUBJECT):
        round = pool.round(post.round_kind)
        url = round.get_absolute_url()
        response = send(web, url, post)
        assert response.status_code < 500, response.content[:500]
        round.refresh_from_db()

        if post.refused_by_django:
            # Django refuses the body before the view reads it; the round is untouched.
            assert response.status_code == 400
            assert round.status == Round.Status.PENDING
            count(SUBJECT, "refused by Django")
            return

        if response.status_code == 303:
            if round.status == Round.Status.PENDING:
                # Agreeing to a link on a round with no form: back to the page, nothing sent.
                assert response["Location"] == url
                count(SUBJECT, "consented")
                return
            assert round.status in (Round.Status.SUBMITTED, Round.Status.CANCELLED), round.status
            assert answered_events(round) == 1
            before = (round.status, round.answers, round.answered_at, deliveries(round))
            assert before[3] == (1 if round.status == Round.Status.SUBMITTED else 0)
            # The same post again changes nothing.
            again = send(web, url, post)
            assert again.status_code == 409, again.status_code
            # The page a round no longer open shows (calls/taken.html): one's own answer, or
            # an abandoned round.
            said = (
                b"You already answered this round"
                if round.status == Round.Status.SUBMITTED
                else b"This round is no longer open"
            )
            assert said in again.content, again.content[:500]
            round.refresh_from_db()
            assert (round.status, round.answers, round.answered_at, deliveries(round)) == before
            assert answered_events(round) == 1
            count(SUBJECT, "abandoned" if round.status == Round.Status.CANCELLED else "answered")
            count(SUBJECT, "answered again")
            pool.retire(post.round_kind)
            return

        # Anything else is the round page again, still pending, with what was typed.
        assert round.status == Round.Status.PENDING, round.status
        assert round.answers is None or round.answers == {}, round.answers
        assert response.templates and response.templates[0].name == "calls/round.html"
        answers = response.context["answers"]
        if response.status_code == 200:
            assert response.wsgi_request.POST.get("consent") is not None
            count(SUBJECT, "consented")
        else:
            assert response.status_code in (400, 409, 422), response.status_code
            assert b'class="problem" role="alert"' in response.content
            count(SUBJECT, "refused")
        if not answers.unsupported:
            kept(response, answers)
