"""The call state machine against real MCP servers: park, answer, resubmit, expire, recover."""

from __future__ import annotations

import base64
import threading
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection as db_connection
from django.utils import timezone

from mrtrweb.calls import engine
from mrtrweb.calls.engine import digests
from mrtrweb.calls.models import Call, Event, Round
from mrtrweb.calls.presenting.history import trail
from mrtrweb.servers.models import Connection
from tests.support.factories import make_connection

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _inline_tasks(inline_tasks: None) -> None:
    """Every test here delivers answers inline."""


def tool_calls(peer: Any, since: int) -> list[dict[str, Any]]:
    return [r for r in peer.recorded(since) if (r["json"] or {}).get("method") == "tools/call"]


APPROVAL = {"approve": True, "replicas": 3, "window": "tonight", "notify": ["ops"]}


def start(peer_conn: Connection, user: Any, tool: str, arguments: Any = None) -> Call:
    return engine.start_call(
        connection=peer_conn,
        method=Call.Method.TOOL,
        target=tool,
        arguments=arguments or {},
        user=user,
    )


def test_a_round_is_parked_answered_and_resubmitted(fastmcp_peer: Any, user: Any) -> None:
    conn = make_connection(fastmcp_peer)
    call = start(conn, user, "approve_deploy", {"service": "api"})
    assert call.status == Call.Status.WAITING
    round = call.rounds.get()
    assert round.status == Round.Status.PENDING
    assert list(round.input_requests) == ["approval"]
    assert round.has_request_state and round.request_state
    assert round.expires_at is not None

    since = fastmcp_peer.mark()
    engine.answer(round, {"approval": {"action": "accept", "content": APPROVAL}}, user)
    call.refresh_from_db()
    round.refresh_from_db()
    assert round.status == Round.Status.DELIVERED
    assert round.answered_by == user
    assert call.status == Call.Status.COMPLETED, call.error
    assert call.result["structuredContent"]["status"] == "deployed"
    sent = tool_calls(fastmcp_peer, since)
    assert len(sent) == 1
    assert sent[0]["json"]["params"]["requestState"] == round.request_state
    assert '"arguments":{"service": "api"}' in sent[0]["body"]
    kinds = [event.kind for event in trail(call)]
    assert kinds == ["started", "round_parked", "answered", "delivered", "completed"]
    # The audit trail keeps the HTTP outcome of the resubmission.
    assert call.events.get(kind="delivered").detail["http_status"] == 200


def test_request_state_is_encrypted_at_rest_and_audited_by_digest(
    fastmcp_peer: Any, user: Any
) -> None:
    call = start(make_connection(fastmcp_peer), user, "approve_deploy", {"service": "api"})
    round = call.rounds.get()
    with db_connection.cursor() as cursor:
        cursor.execute("SELECT request_state FROM calls_round WHERE id = %s", [round.pk])
        (stored,) = cursor.fetchone()
    # The raw bytes of a Fernet token, over the state's base64 decoded: neither is readable.
    stored = bytes(stored)
    payload = round.request_state.rsplit(".", 1)[-1]
    assert stored and round.request_state.encode() not in stored
    assert base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)) not in stored
    parked = call.events.get(kind="round_parked")
    assert digests.shown(parked.detail["request_state_sha256"]) == round.request_state_sha256
    assert round.request_state not in str(list(Event.objects.values_list("detail", flat=True)))


def test_the_same_round_posted_twice_at_once_is_resubmitted_once(
    fastmcp_peer: Any, user: Any
) -> None:
    call = start(make_connection(fastmcp_peer), user, "approve_deploy", {"service": "api"})
    round = call.rounds.get()
    since = fastmcp_peer.mark()
    barrier = threading.Barrier(2)
    outcomes: list[str] = []

    def post() -> None:
        barrier.wait()
        try:
            engine.answer(
                Round.objects.get(pk=round.pk),
                {"approval": {"action": "accept", "content": APPROVAL}},
                user,
            )
            outcomes.append("won")
        except engine.AlreadyAnswered:
            outcomes.append("already answered")
        finally:
            db_connection.close()

    threads = [threading.Thread(target=post) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["already answered", "won"]
    assert len(tool_calls(fastmcp_peer, since)) == 1
    # A second delivery attempt of the same round sends nothing.
    engine.resubmit(round.pk)
    assert len(tool_calls(fastmcp_peer, since)) == 1


def test_several_rounds_until_the_result(fastmcp_peer: Any, user: Any) -> None:
    call = start(make_connection(fastmcp_peer), user, "purchase", {"item": "tea", "quantity": 2})
    first = call.rounds.get()
    engine.answer(
        first, {"shipping": {"action": "accept", "content": {"address": "1 Main St"}}}, user
    )
    call.refresh_from_db()
    assert call.status == Call.Status.WAITING
    second = call.rounds.get(index=2)
    assert list(second.input_requests) == ["payment"]
    engine.answer(second, {"payment": {"action": "accept", "content": {"confirm": True}}}, user)
    call.refresh_from_db()
    assert call.status == Call.Status.COMPLETED
    assert "Purchased 2 x tea" in call.result["content"][0]["text"]


def test_a_three_round_flow_answers_only_the_newest_round_each_time(
    fastmcp_peer: Any, user: Any
) -> None:
    call = start(make_connection(fastmcp_peer), user, "onboarding", {"site": "Bergen"})
    since = fastmcp_peer.mark()
    for key, content in (
        ("name", {"name": "Ada"}),
        ("team", {"team": "ops"}),
        ("confirm", {"ok": True}),
    ):
        round = call.rounds.get(status=Round.Status.PENDING)
        assert list(round.input_requests) == [key]
        engine.answer(round, {key: {"action": "accept", "content": content}}, user)
        call.refresh_from_db()
    assert call.status == Call.Status.COMPLETED, call.error
    assert call.result["content"][0]["text"] == "Ada joins ops at Bergen: created"
    sent = [r["json"]["params"]["inputResponses"] for r in tool_calls(fastmcp_peer, since)]
    assert [list(answers) for answers in sent] == [["name"], ["team"], ["confirm"]]
    assert call.rounds.count() == 3


def test_state_only_rounds_are_retried_without_anyone_seeing_them(
    fastmcp_peer: Any, user: Any
) -> None:
    call = start(make_connection(fastmcp_peer), user, "wait_for_job", {"polls": 3})
    assert call.status == Call.Status.COMPLETED
    assert not call.rounds.exists()
    assert call.events.filter(kind="state_only_retry").count() == 3
    assert call.result["structuredContent"] == {"status": "finished", "polls": 3}


def test_the_round_cap_stops_a_server_that_never_finishes(fastmcp_peer: Any, user: Any) -> None:
    conn = make_connection(fastmcp_peer, max_rounds=2)
    call = start(conn, user, "never_done")
    for _ in range(2):
        round = call.rounds.filter(status=Round.Status.PENDING).get()
        key = next(iter(round.input_requests))
        engine.answer(round, {key: {"action": "accept", "content": {"a": "x"}}}, user)
        call.refresh_from_db()
    assert call.status == Call.Status.FAILED
    assert "more than 2 times" in call.error


def test_an_expired_state_keeps_the_answers_and_a_restart_prefills_them(
    short_ttl_peer: Any, user: Any, time_machine: Any
) -> None:
    conn = make_connection(short_ttl_peer, state_lifetime=timedelta(seconds=2))
    call = start(conn, user, "approve_deploy", {"service": "api"})
    round = call.rounds.get()
    # The in-process peer's state lives 2 s, by the same clock.
    time_machine.move_to(timezone.now() + timedelta(seconds=2.5))
    answers = {"approval": {"action": "accept", "content": APPROVAL}}
    engine.answer(round, answers, user)
    call.refresh_from_db()
    round.refresh_from_db()
    assert call.status == Call.Status.EXPIRED
    assert round.status == Round.Status.EXPIRED
    assert round.answers == answers
    assert "answers are kept" in call.error

    again = engine.restart(call, user)
    assert again.restarted_from == call
    assert again.arguments_json == call.arguments_json
    new_round = again.rounds.get()
    assert engine.saved_answers_for(new_round) == {"approval": APPROVAL}


def test_a_server_failure_leaves_the_round_recoverable(in_process_factory: Any, user: Any) -> None:
    peer = in_process_factory("fastmcp_server", "--state-key", "recoverable")
    conn = make_connection(peer)
    call = start(conn, user, "approve_deploy", {"service": "api"})
    round = call.rounds.get()
    peer.stop()
    answers = {"approval": {"action": "accept", "content": APPROVAL}}
    engine.answer(round, answers, user)
    round.refresh_from_db()
    call.refresh_from_db()
    assert round.status == Round.Status.FAILED
    assert "NotDelivered" in round.delivery_error
    assert call.status == Call.Status.WAITING
    assert round.answers == answers

    # The server comes back (same state key, new port); the stored answers are delivered.
    back = in_process_factory("fastmcp_server", "--state-key", "recoverable")
    Connection.objects.filter(pk=conn.pk).update(url=back.url)
    engine.retry_delivery(round, user)
    call.refresh_from_db()
    assert call.status == Call.Status.COMPLETED, call.error
    assert call.result["structuredContent"]["status"] == "deployed"


def test_undeclared_input_kinds_park_an_unsupported_round_that_can_be_abandoned(
    fastmcp_peer: Any, user: Any
) -> None:
    call = start(make_connection(fastmcp_peer), user, "ask_undeclared")
    round = call.rounds.get()
    assert call.status == Call.Status.WAITING
    assert round.unsupported_reason
    assert set(round.input_requests) == {"draft", "roots"}
    with pytest.raises(engine.NotAnswerable):
        engine.answer(round, {"draft": {"action": "decline"}}, user)
    since = fastmcp_peer.mark()
    engine.abandon(round, user)
    call.refresh_from_db()
    assert call.status == Call.Status.CANCELLED
    assert not tool_calls(fastmcp_peer, since)


def test_decline_is_delivered_without_content(fastmcp_peer: Any, user: Any) -> None:
    call = start(make_connection(fastmcp_peer), user, "approve_deploy", {"service": "db"})
    since = fastmcp_peer.mark()
    engine.answer(call.rounds.get(), {"approval": {"action": "decline"}}, user)
    call.refresh_from_db()
    assert call.status == Call.Status.COMPLETED
    assert call.result["structuredContent"]["status"] == "declined"
    sent = tool_calls(fastmcp_peer, since)[0]["json"]["params"]["inputResponses"]
    assert sent == {"approval": {"action": "decline"}}


def test_prompts_and_resources_that_ask(fastmcp_peer: Any, user: Any) -> None:
    conn = make_connection(fastmcp_peer)
    prompt = engine.start_call(
        connection=conn,
        method=Call.Method.PROMPT,
        target="review_prompt",
        arguments={"topic": "tests"},
        user=user,
    )
    round = prompt.rounds.get()
    key, request = next(iter(round.input_requests.items()))
    props = request["params"]["requestedSchema"]["properties"]
    field, spec = next(iter(props.items()))
    value = (spec.get("enum") or [o["const"] for o in spec.get("oneOf", [])])[0]
    engine.answer(round, {key: {"action": "accept", "content": {field: value}}}, user)
    prompt.refresh_from_db()
    assert prompt.status == Call.Status.COMPLETED
    assert prompt.result["messages"]

    resource = engine.start_call(
        connection=conn,
        method=Call.Method.RESOURCE,
        target="peer://vault/secret",
        arguments=None,
        user=user,
    )
    round = resource.rounds.get()
    key, request = next(iter(round.input_requests.items()))
    props = request["params"]["requestedSchema"]["properties"]
    content = {n: (True if s.get("type") == "boolean" else "x") for n, s in props.items()}
    engine.answer(round, {key: {"action": "accept", "content": content}}, user)
    resource.refresh_from_db()
    assert resource.status == Call.Status.COMPLETED
    assert resource.result["contents"]


def test_a_call_that_cannot_start_fails_with_the_reason(fault_peer: Any, user: Any) -> None:
    # A server that speaks no version this client does (and not the handshake era either).
    peer = fault_peer("unsupported-version")
    call = start(make_connection(peer, name="future"), user, "echo", {"text": "x"})
    assert call.status == Call.Status.FAILED
    assert "Unsupported protocol version" in call.error


def test_rounds_are_resubmitted_with_the_credentials_the_call_started_with(
    fastmcp_peer: Any, user: Any
) -> None:
    conn = make_connection(fastmcp_peer, bearer_token="caller-token")
    call = start(conn, user, "approve_deploy", {"service": "api"})
    # An operator replaces the token while the round waits.
    conn.bearer_token = "new-token"
    conn.save()
    since = fastmcp_peer.mark()
    engine.answer(call.rounds.get(), {"approval": {"action": "accept", "content": APPROVAL}}, user)
    record = tool_calls(fastmcp_peer, since)[0]
    assert ["authorization", "Bearer caller-token"] in record["headers"]


def test_the_official_sdk_server_is_driven_through_the_engine(sdk_peer: Any, user: Any) -> None:
    call = start(make_connection(sdk_peer, name="sdk"), user, "greet", {"city": "Oslo"})
    answers = iter([{"name": "Bo"}, {"age": 41}])
    while call.status == Call.Status.WAITING:
        round = call.rounds.get(status=Round.Status.PENDING)
        key = next(iter(round.input_requests))
        engine.answer(round, {key: {"action": "accept", "content": next(answers)}}, user)
        call.refresh_from_db()
    assert call.status == Call.Status.COMPLETED, call.error
    assert call.rounds.count() == 2
    assert "Bo 41 Oslo" in call.result["content"][0]["text"]
