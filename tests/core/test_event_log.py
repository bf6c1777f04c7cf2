"""Structured logs: one JSON object per line, an event line per engine event with the call and
round ids, and never a secret, a requestState or a person's answer, over a real round trip."""

from __future__ import annotations

import hashlib
import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from cryptography.fernet import Fernet
from django.contrib.auth import get_user_model

from mrtrweb.calls import engine
from mrtrweb.calls.models import Call
from mrtrweb.core.event_log import safe_detail
from mrtrweb.core.logging_json import JsonFormatter
from mrtrweb.elicitation import field_name_for, prefix_for_key
from mrtrweb.servers.models import Connection
from tests.core.support import strong_secret_key

BEARER = "tok-SECRET-bearer-9f3a61"
HEADER_VALUE = "hdr-SECRET-value-71c2e0"
ANSWER = "Zebulon-answer-5521"
PRODUCTION = {
    "DJANGO_ENV": "production",
    "DJANGO_SECRET_KEY": strong_secret_key(),
    "MRTRWEB_FERNET_KEYS": Fernet.generate_key().decode(),
}


@pytest.fixture
def json_log() -> Iterator[io.StringIO]:
    """Everything logged anywhere, down to DEBUG, through the JSON formatter."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield stream
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)


def _lines(stream: io.StringIO) -> list[dict[str, Any]]:
    text = stream.getvalue()
    assert text, "nothing was logged"
    # Every line must parse on its own: a collector reads line by line.
    return [json.loads(line) for line in text.splitlines()]


@pytest.mark.django_db(transaction=True)
def test_a_round_trip_logs_json_event_lines_without_secrets(
    client: Any, fastmcp_peer: Any, inline_tasks: None, json_log: io.StringIO
) -> None:
    user = get_user_model().objects.create_user("logan", password="pw-logan-123")
    connection = Connection.objects.create(
        name="peer",
        url=fastmcp_peer.url,
        bearer_token=BEARER,
        headers={"X-Api-Key": HEADER_VALUE},
    )
    call = engine.start_call(
        connection=connection,
        method=Call.Method.TOOL,
        target="two_questions",
        arguments={},
        user=user,
    )
    round = call.rounds.get()
    state = round.request_state
    assert state, "the peer should have sent a requestState"

    client.force_login(user)
    response = client.post(
        round.get_absolute_url(),
        {
            "action": "accept",
            f"{prefix_for_key('name')}-{field_name_for('name')}": ANSWER,
            # Choices are posted by their index: "1" is green.
            f"{prefix_for_key('color')}-{field_name_for('color')}": "1",
        },
    )
    assert response.status_code == 303, response.content[:2000]
    call.refresh_from_db()
    assert call.status == Call.Status.COMPLETED, call.error
    assert f"{ANSWER} likes green" in json.dumps(call.result)  # the answer really went

    lines = _lines(json_log)
    for line in lines:
        assert {"time", "level", "logger", "message"} <= set(line)

    events = [line for line in lines if line["logger"] == "mrtrweb.events"]
    assert [e["kind"] for e in events] == [
        "started",
        "round_parked",
        "answered",
        "delivered",
        "completed",
    ]
    assert {e["call_id"] for e in events} == {call.pk}
    by_kind = {e["kind"]: e for e in events}
    for kind in ("round_parked", "answered", "delivered"):
        assert by_kind[kind]["round_id"] == round.pk
    assert by_kind["started"]["round_id"] is None
    assert by_kind["delivered"]["detail"]["http_status"] == 200
    # The state is identified by its digest, never shown.
    digest = hashlib.sha256(state.encode()).hexdigest()
    assert by_kind["round_parked"]["detail"]["request_state_sha256"] == digest
    # The round's number is announced (and logged), though the stored event leaves it to
    # the round row.
    assert by_kind["round_parked"]["detail"]["index"] == 1

    everything = json_log.getvalue()
    for secret in (BEARER, HEADER_VALUE, state, ANSWER):
        assert secret not in everything
    assert "requestState" not in everything
    assert "inputResponses" not in everything


def test_only_allow_listed_scalar_detail_is_logged() -> None:
    detail = {
        "answers": {"q": {"action": "accept", "content": {"name": ANSWER}}},
        "asked": ["What is your name?"],
        "request_state": "opaque",
        "http_status": 502,
        "reason": "NotDelivered: https://bob:hunter2@mcp.example/mcp refused",
        "target": {"nested": "objects are dropped even under a safe name"},
    }

    assert safe_detail(detail) == {"http_status": 502, "reason": "NotDelivered"}
    assert safe_detail({"reason": "round cap"}) == {"reason": "(not shown)"}
    assert safe_detail({"reason": "HTTPStatusError: 500 {echo of the request}"}) == {
        "reason": "HTTPStatusError"
    }


_LOG_A_LINE = """
import django, logging
django.setup()
logging.getLogger("mrtrweb.somewhere").warning("hello %s", "there", extra={"call_id": 7})
"""


@pytest.mark.parametrize(("variables", "json_lines"), [({}, False), (PRODUCTION, True)])
def test_the_log_format_follows_the_environment(
    run_python: Any, variables: dict[str, str], json_lines: bool
) -> None:
    result = run_python("-c", _LOG_A_LINE, env=variables)
    assert result.returncode == 0, result.stderr

    line = result.stderr.strip().splitlines()[-1]
    if json_lines:
        shown = json.loads(line)
        assert shown["message"] == "hello there"
        assert (shown["level"], shown["logger"], shown["call_id"]) == (
            "WARNING",
            "mrtrweb.somewhere",
            7,
        )
    else:
        assert line.endswith("WARNING mrtrweb.somewhere: hello there")
