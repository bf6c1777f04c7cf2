"""A page that waited for its delivery shows what the delivery stored, without reading it back.

``engine.start_call`` and ``engine.answer`` hand the request to a delivery thread and wait
(calls/handoff.py). When that delivery completed the call or parked its next round, the thread
hands back its own objects (``exchange.Exchanged``), and the waiting request uses them instead
of reading the call (or the round with its call) again: one wide read less a start and an
answer. That is only right if those objects are the rows exactly as stored, so each
test here compares every column of what came back with a fresh read, against the real fastmcp
peer, for each ending that hands objects back; endings that do not (a failed send, an answer
whose delivery outlasts the wait) are read back, as before.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.db import connection
from django.db.models import Model
from django.test.utils import CaptureQueriesContext

from mrtrweb.calls import engine
from mrtrweb.calls.models import Call, Round
from mrtrweb.servers.catalog import refresh_catalog
from mrtrweb.servers.models import Connection
from tests.calls.engine.delivery_support import CONFIRM, DATABASE_QUEUE

pytestmark = pytest.mark.django_db(transaction=True)

WAIT = 10.0


@pytest.fixture(autouse=True)
def _hand_off(settings: Any) -> None:
    settings.TASKS = DATABASE_QUEUE
    settings.MRTRWEB_DELIVER_ON_ANSWER = True


@pytest.fixture
def conn(peer_conn: Connection) -> Connection:
    refresh_catalog(peer_conn)
    return peer_conn


def columns(obj: Model) -> dict[str, Any]:
    return {field.attname: getattr(obj, field.attname) for field in obj._meta.concrete_fields}


def assert_as_stored(call: Call) -> None:
    """``call`` (and the rows read with it) hold exactly what a fresh read gives."""
    fresh = Call.objects.select_related("connection", "started_by").get(pk=call.pk)
    assert columns(call) == columns(fresh)
    # The related rows a page uses come with it, as a read would give them.
    assert call.connection.pk == fresh.connection.pk
    assert call.started_by.get_username() == fresh.started_by.get_username()


def start(conn: Connection, user: Any, tool: str, **arguments: Any) -> tuple[Call, list[str]]:
    """Start ``tool`` as a page does, and the SQL this thread sent while doing so."""
    with CaptureQueriesContext(connection) as queries:
        call = engine.start_call(
            connection=conn,
            method=Call.Method.TOOL,
            target=tool,
            arguments=arguments,
            user=user,
            deliver_within=WAIT,
        )
    return call, [query["sql"] for query in queries.captured_queries]


def reads_of(table: str, sql: list[str]) -> list[str]:
    return [q for q in sql if q.startswith("SELECT") and f'FROM "{table}"' in q]


def test_a_start_that_parks_its_first_round_hands_back_the_waiting_call(
    conn: Connection, ada: Any
) -> None:
    call, sql = start(conn, ada, "approve_deploy", service="api")
    assert call.status == Call.Status.WAITING and call.rounds_used == 1
    assert_as_stored(call)
    # Written by this thread, sent by the delivery thread: never read here.
    assert reads_of("calls_call", sql) == []


def test_a_start_that_completes_hands_back_the_completed_call(conn: Connection, ada: Any) -> None:
    call, sql = start(conn, ada, "echo", text="hello")
    assert call.status == Call.Status.COMPLETED and call.finished_at is not None
    assert call.result["content"][0]["text"] == "hello"
    assert_as_stored(call)
    assert reads_of("calls_call", sql) == []


def test_a_start_whose_server_reported_progress_hands_back_the_progress_kept(
    fastmcp_process_peer: Any, ada: Any
) -> None:
    # The latest progress is written to the call while the server works (engine.progress);
    # the peer in a process of its own, whose progress arrives while the call runs.
    conn = Connection.objects.create(name="progress", url=fastmcp_process_peer.url)
    refresh_catalog(conn)
    call, sql = start(conn, ada, "slow_progress", steps=3, delay=0.05)
    assert call.status == Call.Status.COMPLETED
    assert call.progress and call.progress["total"] == 3.0
    assert_as_stored(call)
    assert reads_of("calls_call", sql) == []


def test_a_start_whose_send_fails_is_read_back(ada: Any) -> None:
    # Nothing listens there: the send fails the call, an ending nothing is handed back for.
    dead = Connection.objects.create(name="dead", url="http://127.0.0.1:9/mcp")
    call, sql = start(dead, ada, "echo", text="hello")
    assert call.status == Call.Status.FAILED and call.error
    assert_as_stored(call)
    assert len(reads_of("calls_call", sql)) == 1


def test_a_call_sent_on_the_caller_s_thread_is_the_call_its_send_stored(
    conn: Connection, ada: Any
) -> None:
    # The API's synchronous start and the mcp_call command: engine.run_call, no delivery thread.
    with CaptureQueriesContext(connection) as queries:
        call = engine.start_call(
            connection=conn,
            method=Call.Method.TOOL,
            target="approve_deploy",
            arguments={"service": "api"},
            user=ada,
        )
    assert call.status == Call.Status.WAITING
    assert_as_stored(call)
    # Read once, by the send's claim, with what sending needs; not again after it.
    assert len(reads_of("calls_call", [q["sql"] for q in queries.captured_queries])) == 1


def answer(round: Round, user: Any, answers: dict[str, Any], wait: float = WAIT) -> Round:
    return engine.answer(round, answers, user, deliver_within=wait)


def assert_round_as_stored(round: Round) -> None:
    fresh = Round.objects.get(pk=round.pk)
    assert columns(round) == columns(fresh)
    assert_as_stored(round.call)


def test_an_answer_that_completes_the_call_hands_back_the_delivered_round(
    conn: Connection, ada: Any
) -> None:
    call, _ = start(conn, ada, "approve_deploy", service="api")
    asked = call.rounds.get()
    with CaptureQueriesContext(connection) as queries:
        answered = answer(asked, ada, {"approval": {"action": "accept", "content": CONFIRM}})
    assert answered.status == Round.Status.DELIVERED and answered.last_http_status == 200
    assert answered.call.status == Call.Status.COMPLETED
    assert_round_as_stored(answered)
    sql = [query["sql"] for query in queries.captured_queries]
    assert reads_of("calls_round", sql) == [] and reads_of("calls_call", sql) == []


def test_an_answer_that_parks_the_next_round_hands_back_the_waiting_call(
    conn: Connection, ada: Any
) -> None:
    call, _ = start(conn, ada, "purchase", item="lamp")
    first = call.rounds.get()
    answered = answer(
        first, ada, {"shipping": {"action": "accept", "content": {"address": "1 Main St"}}}
    )
    assert answered.status == Round.Status.DELIVERED
    assert answered.call.status == Call.Status.WAITING and answered.call.rounds_used == 2
    assert_round_as_stored(answered)
    assert answered.call.rounds.filter(status=Round.Status.PENDING).count() == 1


def test_an_answer_not_delivered_within_the_wait_is_read_back(conn: Connection, ada: Any) -> None:
    call, _ = start(conn, ada, "approve_deploy", service="api")
    asked = call.rounds.get()
    # Not waited for at all: what comes back is the round as it is at that moment.
    answered = answer(asked, ada, {"approval": {"action": "accept", "content": CONFIRM}}, 0.0)
    assert answered.status in (
        Round.Status.SUBMITTED,
        Round.Status.DELIVERING,
        Round.Status.DELIVERED,
    )
    assert answered.answers == {"approval": {"action": "accept", "content": CONFIRM}}
    # The delivery thread goes on meanwhile; the test ends once it is done.
    deadline = time.monotonic() + WAIT
    while Call.objects.get(pk=call.pk).status != Call.Status.COMPLETED:
        assert time.monotonic() < deadline, "the delivery never completed the call"
        time.sleep(0.02)
