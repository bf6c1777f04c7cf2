"""Thousands of generated requests to ``POST /api/v1/rounds/{id}/responses`` (docs/api.md).

Bodies are answers shaped like the real thing (every key, some keys, unknown keys; each
action; content typed right, typed wrong, out of range, unknown properties), any JSON at
all, and no JSON (bytes, truncated text, ``NaN``, absurd nesting, more than a megabyte),
sent with the right content type, a wrong one or none, sometimes to an id that is no round,
with another method or without a valid token. The rounds are parked without a server and
delivery on answer is off (``tests.fuzz.rounds``).

For every request: never a 5xx; every 4xx is ``application/problem+json`` whose ``status``
is the response's and whose ``detail`` (and each ``errors`` entry's) says what is wrong; a
202 leaves the round submitted once with answers that meet its schemas, and the same request
again is a 409 that changes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client
from hypothesis import given
from hypothesis import strategies as st

from mrtrweb.api.models import ApiToken
from mrtrweb.api.problems import MAX_BODY_BYTES
from mrtrweb.calls.models import Round
from mrtrweb.elicitation import FormRequest, Kind, parse_request
from tests.dashboard.support import make_connection, make_end_user
from tests.elicitation.support import content_problems
from tests.fuzz.rounds import (
    ROUNDS,
    Pool,
    answered_events,
    check_each_answered_once,
    deliveries,
    sections,
)
from tests.fuzz.strategies import json_values, short_nasty_text
from tests.fuzz.support import fuzz
from tests.fuzz.tally import count, counting_errors, declare

pytestmark = [pytest.mark.django_db, pytest.mark.timeout(600)]

SUBJECT = "API answers"
STATUSES = (400, 401, 404, 405, 409, 413, 415, 422)
OUTCOMES = ("accepted", *(f"refused {s}" for s in STATUSES), "answered again")
PROBLEM = "application/problem+json"


def _wire_value(draw: st.DrawFn, spec: Any) -> Any:
    """A JSON value for one property: usually one that fits, often one that does not."""
    kind = spec.kind
    how = draw(st.integers(0, 9))
    if how == 9:
        return draw(json_values)
    if how == 8:
        return None
    if kind is Kind.BOOLEAN:
        return draw(st.booleans() | st.sampled_from([0, 1, "true", "on"]))
    if kind is Kind.SINGLE_SELECT:
        return draw(st.sampled_from(spec.option_values()) | short_nasty_text)
    if kind is Kind.MULTI_SELECT:
        values = spec.option_values()
        return draw(st.lists(st.sampled_from(values), max_size=len(values) + 1))
    if kind is Kind.INTEGER:
        return draw(st.integers(-2, 12) | st.sampled_from([3.0, 2**63, "3", True]))
    if kind is Kind.NUMBER:
        return draw(
            st.floats(-2, 1e308, allow_nan=False) | st.sampled_from([-1.5, 0, 1e308, "1", False])
        )
    if spec.format == "email":
        return draw(st.sampled_from(["ops@example.com", "a@b", "not an email", " x@y.org "]))
    if spec.format == "uri":
        return draw(st.sampled_from(["https://example.com/", "example.com", "urn:x", ""]))
    if spec.format == "date":
        return draw(st.sampled_from(["2026-08-01", "2026-02-30", "0013-01-01", "today"]))
    if spec.format == "date-time":
        return draw(
            st.sampled_from(
                ["2026-08-01T09:30:00Z", "2026-08-01T09:30", "2026-08-01T09:30:00+14:00", "x"]
            )
        )
    return draw(st.text(max_size=45) | short_nasty_text)


@st.composite
def answer_bodies(draw: st.DrawFn, kind: str) -> Any:
    """``{"responses": {...}}`` shaped like a program's answer, right or wrong."""
    responses: dict[str, Any] = {}
    for section in sections(kind):
        if draw(st.integers(0, 9)) == 9:
            continue  # a key left unanswered
        action = draw(
            st.sampled_from(["accept", "accept", "decline", "cancel"])
            | (short_nasty_text if draw(st.integers(0, 9)) == 9 else st.nothing())
        )
        answer: dict[str, Any] = {"action": action}
        if section.form is not None and (action == "accept" or draw(st.integers(0, 9)) == 9):
            content: dict[str, Any] = {}
            for spec in section.form.spec:
                if draw(st.integers(0, 5)) == 5:
                    continue  # a property left out
                content[spec.prop] = _wire_value(draw, spec)
            if draw(st.integers(0, 9)) == 9:
                content[draw(short_nasty_text)] = draw(json_values)  # an unknown property
            answer["content"] = content
        elif draw(st.integers(0, 9)) == 9:
            answer["content"] = draw(json_values)
        if draw(st.integers(0, 19)) == 19:
            answer[draw(short_nasty_text)] = draw(json_values)  # an unknown field
        responses[section.key] = answer
    if draw(st.integers(0, 9)) == 9:
        responses[draw(short_nasty_text)] = {"action": "decline"}  # a key the round lacks
    body: dict[str, Any] = {"responses": responses}
    if draw(st.integers(0, 19)) == 19:
        body[draw(short_nasty_text)] = draw(json_values)
    return body


NOT_JSON = st.sampled_from(
    [
        b"",
        b"{",
        b'{"responses": NaN}',
        b'{"responses": {"a": {"action": "accept", "content": {"n": Infinity}}}}',
        b"\xef\xbb\xbf{}",
        b"\xff\xfe{\x00}\x00",
        b'{"responses": {"\xed\xa0\x80": 1}}',
        b'{"responses": {"k": {"action": "accept", "content": {"t": "\\u0000"}}}}',
        b'{"responses": {"k": {"action": "accept", "content": {"t": "\\ud800"}}}}',
        b"[" * 100_000 + b"]" * 100_000,
        b'{"a":' * 5_000 + b"1" + b"}" * 5_000,
        b"responses=1&action=accept",
        b"null",
    ]
) | st.binary(max_size=64)
CONTENT_TYPES = st.sampled_from(
    [
        "application/json",
        "application/json; charset=utf-8",
        "application/merge-patch+json",
        "application/JSON",
        "application/json; charset=utf-16",
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "",
    ]
)
ODD_IDS = st.sampled_from(["0", "-1", "abc", "1e3", "99999999999999999999999", "%00", "٣"])


@st.composite
def requests(draw: st.DrawFn, pool: Pool) -> dict[str, Any]:
    kind = draw(st.sampled_from(sorted(ROUNDS)))
    round = pool.round(kind)
    shape = draw(st.integers(0, 19))
    if shape < 13:
        body = json.dumps(draw(answer_bodies(kind)), allow_nan=True).encode()
    elif shape < 16:
        body = json.dumps(draw(json_values), allow_nan=True).encode()
    elif shape < 19 or draw(st.integers(0, 3)) < 3:
        body = draw(NOT_JSON)
    else:
        body = b'{"responses": {"x": "' + b"y" * (MAX_BODY_BYTES + 1) + b'"}}'
    content_type = "application/json" if draw(st.integers(0, 4)) < 4 else draw(CONTENT_TYPES)
    pk = str(round.pk) if draw(st.integers(0, 19)) < 19 else draw(ODD_IDS)
    method = "POST" if draw(st.integers(0, 29)) < 29 else draw(st.sampled_from(["GET", "PUT"]))
    auth = draw(st.integers(0, 29))
    return {
        "kind": kind,
        "path": f"/api/v1/rounds/{pk}/responses",
        "body": body,
        "content_type": content_type,
        "method": method,
        "auth": "token" if auth < 28 else ("none" if auth == 28 else "garbled"),
    }


def send(client: Client, token: str, request: dict[str, Any]) -> Any:
    headers = {}
    if request["auth"] == "token":
        headers["Authorization"] = f"Bearer {token}"
    elif request["auth"] == "garbled":
        headers["Authorization"] = "Bearer " + token[::-1]
    return client.generic(
        request["method"],
        request["path"],
        request["body"],
        content_type=request["content_type"],
        headers=headers,
    )


def clear_problem(response: Any) -> dict[str, Any]:
    assert response["Content-Type"] == PROBLEM, (response.status_code, response["Content-Type"])
    problem = response.json()
    assert problem["status"] == response.status_code
    assert isinstance(problem["title"], str) and problem["title"].strip()
    assert isinstance(problem["type"], str) and problem["type"]
    assert isinstance(problem["detail"], str) and problem["detail"].strip(), problem
    for error in problem.get("errors") or []:
        assert isinstance(error["detail"], str) and error["detail"].strip(), error
        # An RFC 6901 pointer: "" is the whole body.
        pointer = error.get("pointer")
        assert pointer is None or pointer == "" or pointer.startswith("/"), error
    return problem


def check_stored(round: Round) -> None:
    """What a 202 stored: every key answered, and each accepted form's content meets its
    schema (judged by jsonschema, not by the code under test)."""
    assert round.status == Round.Status.SUBMITTED, round.status
    assert set(round.answers) == set(round.input_requests)
    for key, answer in round.answers.items():
        assert answer["action"] in ("accept", "decline", "cancel")
        if "content" in answer:
            parsed = parse_request(round.input_requests[key])
            assert isinstance(parsed, FormRequest) and answer["action"] == "accept"
            assert content_problems(parsed.schema, answer["content"]) == [], answer


@pytest.fixture(scope="module")
def _declared() -> None:
    declare(SUBJECT, OUTCOMES)


@pytest.fixture
def pool(db: Any) -> Iterator[Pool]:
    pool = Pool(person=make_end_user("eve"), connection=make_connection())
    yield pool
    check_each_answered_once(pool)


@pytest.fixture
def token(pool: Pool) -> str:
    _, plain = ApiToken.issue(pool.person, "fuzz")
    return plain


@fuzz(1500)
@given(data=st.data())
def test_the_responses_endpoint_answers_every_body_cleanly(
    data: Any, _declared: None, pool: Pool, token: str
):
    request = data.draw(requests(pool), label="request")
    client = Client(enforce_csrf_checks=True)
    with counting_errors(SUBJECT):
        round = pool.round(request["kind"])
        response = send(client, token, request)
        assert response.status_code < 500, response.content[:500]
        round.refresh_from_db()
        if response.status_code != 202:
            assert 400 <= response.status_code < 500, response.status_code
            clear_problem(response)
            assert response.status_code in STATUSES, response.status_code
            assert round.status == Round.Status.PENDING
            count(SUBJECT, f"refused {response.status_code}")
            return

        check_stored(round)
        assert response["Content-Type"] == "application/json"
        assert response.json()["status"] == "submitted"
        assert answered_events(round) == 1 and deliveries(round) == 1
        before = (round.answers, round.answered_at)
        again = send(client, token, request)
        assert again.status_code == 409, again.status_code
        assert clear_problem(again)["type"].endswith("already-answered")
        round.refresh_from_db()
        assert (round.answers, round.answered_at) == before
        assert answered_events(round) == 1 and deliveries(round) == 1
        count(SUBJECT, "accepted")
        count(SUBJECT, "answered again")
        pool.retire(request["kind"])
