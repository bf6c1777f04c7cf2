"""Questions of a handshake-era server (mcp 1.x FastMCP, a real peer) as rounds.

A question on the call's stream is parked as a round by the same code as a 2026-07-28 round,
answered through ``engine.answer`` as any round, and its answer goes back on the stream as
the JSON-RPC response, exactly once, by the process that holds the stream (engine.streams).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from mrtrweb.calls import engine, handoff
from mrtrweb.calls.engine import streams
from mrtrweb.calls.engine.handshake_calls import wait_idle
from mrtrweb.calls.models import Call, Round
from mrtrweb.calls.presenting.history import trail
from mrtrweb.calls.presenting.outcome_badges import expiry_of
from mrtrweb.elicitation.questions import FormQuestion, UrlQuestion
from mrtrweb.servers.catalog import refresh_catalog
from mrtrweb.servers.models import Connection
from tests.peers.mcp1 import Mcp1Peer
from tests.support.factories import make_connection

pytestmark = pytest.mark.django_db(transaction=True)

KEY = streams.ELICITATION_KEY


@pytest.fixture(autouse=True)
def _conversations_end() -> Iterator[None]:
    yield
    # A conversation left running would write into the next test's database.
    if not wait_idle(20.0):
        handoff.shutdown()
        pytest.fail("a conversation was still running after the test")


@pytest.fixture
def conn(mcp1_peer: Mcp1Peer) -> Connection:
    return make_connection(mcp1_peer, name="old", era=Connection.Era.LEGACY)


def start(conn: Connection, user: Any, tool: str = "ask_twice") -> Call:
    return engine.start_call(
        connection=conn, method=Call.Method.TOOL, target=tool, arguments={}, user=user
    )


def pending(call: Call) -> Round:
    return call.rounds.get(status=Round.Status.PENDING)


def accept(round: Round, user: Any, **content: Any) -> Round:
    return engine.answer(
        round, {KEY: {"action": "accept", "content": content}}, user, deliver_within=10
    )


def test_two_questions_in_a_row_then_the_result(
    conn: Connection, mcp1_peer: Mcp1Peer, user: Any
) -> None:
    before = mcp1_peer.sessions()
    call = start(conn, user)
    # start_call returned once the question was parked, not after it was answered.
    assert call.status == Call.Status.WAITING, call.error
    first = pending(call)
    assert first.carrier == Round.Carrier.STREAM
    assert not first.has_request_state
    assert first.owner == streams.owner_id()
    (question,) = first.questions()
    assert isinstance(question, FormQuestion)
    assert question.message == "What is your name?"
    # The deadline is the connection's question deadline, shown as any round's.
    assert first.expires_at is not None
    left = (first.expires_at - timezone.now()).total_seconds()
    assert conn.question_deadline - 30 < left <= conn.question_deadline

    answered = accept(first, user, name="Ada")
    # The page waited for the outcome: the answer went back on the stream, the server asked
    # again, so the first round is delivered and the second waits.
    assert answered.status == Round.Status.DELIVERED
    call.refresh_from_db()
    assert call.status == Call.Status.WAITING
    second = pending(call)
    assert second.index == 2
    assert second.questions()[0].message == "Hello Ada: your favourite colour?"

    accept(second, user, color="green")
    call.refresh_from_db()
    assert call.status == Call.Status.COMPLETED, call.error
    assert call.result["content"][0]["text"] == "Ada likes green"
    second.refresh_from_db()
    assert second.status == Round.Status.DELIVERED
    kinds = [event.kind for event in trail(call)]
    assert kinds == [
        "started",
        "round_parked",
        "answered",
        "delivered",
        "round_parked",
        "answered",
        "delivered",
        "completed",
    ]
    assert wait_idle(10.0)
    after = mcp1_peer.sessions()
    assert after["opened"] - before["opened"] == after["closed"] - before["closed"] == 1


@pytest.mark.parametrize("action", ["decline", "cancel"])
def test_decline_and_cancel_reach_the_tool(conn: Connection, user: Any, action: str) -> None:
    call = start(conn, user)
    engine.answer(pending(call), {KEY: {"action": action}}, user, deliver_within=10)
    call.refresh_from_db()
    assert call.status == Call.Status.COMPLETED, call.error
    assert call.result["content"][0]["text"] == f"stopped at name: {action}"


def test_the_cancel_action_of_a_round(conn: Connection, user: Any) -> None:
    call = start(conn, user)
    engine.cancel_round(pending(call), user)
    assert wait_idle(10.0)
    call.refresh_from_db()
    assert call.result["content"][0]["text"] == "stopped at name: cancel"


def test_a_url_question_is_a_url_round(conn: Connection, mcp1_peer: Mcp1Peer, user: Any) -> None:
    call = start(conn, user, "url_question")
    round = pending(call)
    (question,) = round.questions()
    assert isinstance(question, UrlQuestion)
    assert question.url == f"{mcp1_peer.base_url}/authorize?ref=mcp1"
    engine.answer(round, {KEY: {"action": "accept"}}, user, deliver_within=10)
    call.refresh_from_db()
    assert call.result["content"][0]["text"] == "url: accept"


def test_an_answer_posted_twice_at_once_is_sent_once(conn: Connection, user: Any) -> None:
    call = start(conn, user)
    round = pending(call)
    outcomes: list[str] = []
    barrier = threading.Barrier(2)

    def post(name: str) -> None:
        from django.db import connections

        barrier.wait()
        try:
            accept(Round.objects.get(pk=round.pk), user, name=name)
            outcomes.append("taken")
        except engine.AlreadyAnswered:
            outcomes.append("refused")
        finally:
            connections.close_all()

    threads = [threading.Thread(target=post, args=(n,)) for n in ("Ada", "Bob")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["refused", "taken"]
    round.refresh_from_db()
    assert round.status == Round.Status.DELIVERED
    assert round.attempts == 1
    second = pending(call)
    # The server heard one answer: the one stored.
    assert second.questions()[0].message.startswith(
        f"Hello {round.answers[KEY]['content']['name']}"
    )
    engine.answer(second, {KEY: {"action": "decline"}}, user, deliver_within=10)
    assert call.events.filter(kind="delivered", round=round).count() == 1


def test_resubmit_and_its_safety_net_never_resend_a_stream_round(
    conn: Connection, user: Any
) -> None:
    call = start(conn, user)
    round = pending(call)
    engine.answer(round, {KEY: {"action": "decline"}}, user)
    # What would resend a 2026-07-28 round does nothing to it: its owner sends it.
    engine.resubmit(round.pk)
    engine.resubmit(round.pk, unclaimed_only=True)
    assert wait_idle(10.0)
    round.refresh_from_db()
    assert round.status == Round.Status.DELIVERED
    assert round.attempts == 1
    call.refresh_from_db()
    assert call.result["content"][0]["text"] == "stopped at name: decline"


def test_the_deadline_passes(mcp1_peer: Mcp1Peer, user: Any) -> None:
    conn = make_connection(
        mcp1_peer, name="old-short", era=Connection.Era.LEGACY, question_deadline=1.0
    )
    call = start(conn, user)
    round = pending(call)
    assert wait_idle(15.0)
    round.refresh_from_db()
    call.refresh_from_db()
    assert round.status == Round.Status.EXPIRED
    assert call.status == Call.Status.EXPIRED
    assert call.error == streams.TIMED_OUT
    # The server was told "cancel"; what it answered then is not the call's result.
    assert call.result is None
    assert call.events.filter(kind="late_answer_ignored").exists()


def test_an_owner_that_stopped_beating_loses_the_round_and_restart_fills_it_in(
    conn: Connection, user: Any, settings: Any
) -> None:
    call = start(conn, user)
    first = accept(pending(call), user, name="Ada")
    assert first.status == Round.Status.DELIVERED
    second = pending(call)
    # The owner's heartbeat is older than the grace: as if its process had died.
    stale = timezone.now() - timedelta(seconds=settings.MRTRWEB_STREAM_GRACE + 1)
    Round.objects.filter(pk=second.pk).update(heard_at=stale)
    # Answered meanwhile (the person's typing is kept whatever happens next)...
    Round.objects.filter(pk=second.pk).update(owner="gone:1:dead")
    engine.answer(
        second, {KEY: {"action": "accept", "content": {"color": "red"}}}, user, deliver_within=0
    )
    Round.objects.filter(pk=second.pk).update(heard_at=stale)
    assert engine.lose_if_orphaned(second.pk)
    second.refresh_from_db()
    call.refresh_from_db()
    assert second.status == Round.Status.EXPIRED
    assert second.answers == {KEY: {"action": "accept", "content": {"color": "red"}}}
    assert call.status == Call.Status.EXPIRED
    assert call.error == streams.LOST_BEFORE_ANSWER
    lost = call.events.get(kind="expired")
    assert lost.detail["reason"] == "lost"
    # The call page says so, in those words.
    expiry = expiry_of(list(call.rounds.all()))
    assert (expiry.why, expiry.answered) == ("lost", True)
    assert expiry.round.delivery_error == streams.LOST_BEFORE_ANSWER
    # The real owner, still holding the stream, sees the round closed and answers "cancel".
    assert wait_idle(10.0)
    call.refresh_from_db()
    assert call.status == Call.Status.EXPIRED

    again = engine.restart(call, user)
    assert again.status == Call.Status.WAITING, again.error
    round = pending(again)
    # The first question is the same: its answer is filled in. Answered, the second one is
    # filled in too.
    assert engine.saved_answers_for(round) == {KEY: {"name": "Ada"}}
    accept(round, user, name="Ada")
    round2 = pending(again)
    assert engine.saved_answers_for(round2) == {KEY: {"color": "red"}}
    accept(round2, user, color="red")
    again.refresh_from_db()
    assert again.result["content"][0]["text"] == "Ada likes red"


def test_the_scheduler_loses_rounds_whose_owner_stopped(conn: Connection, user: Any) -> None:
    call = start(conn, user)
    round = pending(call)
    # Its owner beats: neither the watchdog nor the sweep touch it.
    assert not engine.lose_if_orphaned(round.pk)
    assert engine.run_due()["lost"] == 0
    assert pending(call).pk == round.pk
    later = timezone.now() + timedelta(seconds=60)
    counts = engine.run_due(now=later)
    assert counts["lost"] == 1
    round.refresh_from_db()
    assert round.status == Round.Status.EXPIRED
    assert wait_idle(10.0)


def test_a_2026_round_is_not_a_stream_round(peer_conn: Connection, user: Any) -> None:
    call = engine.start_call(
        connection=peer_conn,
        method=Call.Method.TOOL,
        target="purchase",
        arguments={"item": "tea", "quantity": 2},
        user=user,
    )
    round = pending(call)
    assert (round.carrier, round.owner, round.has_request_state) == (
        Round.Carrier.RETRY,
        "",
        True,
    )
    # Its expiry is the state's lifetime, not a question deadline.
    assert round.expires_at is not None
    left = round.expires_at - timezone.now()
    assert left > peer_conn.state_lifetime - timedelta(seconds=30)


def test_a_clean_shutdown_cancels_the_question_and_loses_its_round(
    conn: Connection, mcp1_peer: Mcp1Peer, user: Any
) -> None:
    before = mcp1_peer.sessions()
    call = start(conn, user)
    round = pending(call)
    handoff.shutdown()
    assert wait_idle(10.0)
    round.refresh_from_db()
    call.refresh_from_db()
    assert round.status == Round.Status.EXPIRED
    assert call.status == Call.Status.EXPIRED
    assert call.error == streams.LOST_BEFORE_ANSWER
    assert call.events.get(kind="expired").detail["reason"] == "lost"
    # The server was answered (cancel) and the session closed, not left to time out.
    after = mcp1_peer.sessions()
    assert after["closed"] - before["closed"] == after["opened"] - before["opened"] == 1
    # Nothing is left for the sweep to find.
    assert engine.run_due(now=timezone.now() + timedelta(minutes=5))["lost"] == 0


def test_through_the_pages(
    conn: Connection, mcp1_peer: Mcp1Peer, ada: Any, web: Any, settings: Any
) -> None:
    """Start, answer both questions and read the result with the pages a person uses: each
    answer's page waited for the server's next question (another round page) or the result."""
    from tests.calls.pages.client import Pages, start_tool, visible_text
    from tests.calls.pages.test_views import answer_data

    # As served: the start page's own process sends the call (a delivery thread, which is
    # free again once the question is parked).
    settings.MRTRWEB_DELIVER_ON_ANSWER = True
    refresh_catalog(conn)
    pages = Pages(web)
    started = start_tool(pages, conn, "ask_twice")
    assert started.status_code == 303
    page = pages.get(started["Location"])
    assert "What is your name?" in visible_text(page)
    # The question deadline is shown as any round's.
    assert re.search(r"Due in (9|10) minutes", visible_text(page))
    first = Round.objects.get()
    asked = pages.post(first.get_absolute_url(), answer_data(KEY, {"name": "Zoë"}))
    assert asked.status_code == 303
    second = Round.objects.get(index=2)
    assert asked["Location"] == second.get_absolute_url()
    assert "Hello Zoë: your favourite colour?" in visible_text(pages.get(asked["Location"]))
    done = pages.post(second.get_absolute_url(), answer_data(KEY, {}, action="decline"))
    call = second.call
    assert done["Location"] == call.get_absolute_url()
    assert "stopped at color: decline" in visible_text(pages.get(done["Location"]))


def test_a_server_gone_when_the_answer_goes_out_loses_the_round(
    mcp1_factory: Any, user: Any
) -> None:
    peer = mcp1_factory()
    conn = make_connection(peer, name="old-restarts", era=Connection.Era.LEGACY)
    call = start(conn, user)
    round = pending(call)
    peer.stop()
    # The answer is taken (and kept); sending it on the stream fails: the server is gone.
    accept(round, user, name="Ada")
    assert wait_idle(15.0)
    round.refresh_from_db()
    call.refresh_from_db()
    assert round.status == Round.Status.EXPIRED
    assert round.answers == {KEY: {"action": "accept", "content": {"name": "Ada"}}}
    assert call.status == Call.Status.EXPIRED
    assert call.error == streams.LOST_BEFORE_ANSWER
    expired = call.events.get(kind="expired")
    assert (expired.detail["reason"], expired.detail["answer_sent"]) == ("lost", False)

    # The server is back (a new process, no sessions): "Start again" opens a new session,
    # and the kept answer is filled in.
    back = mcp1_factory(port=peer.port)
    again = engine.restart(call, user)
    assert again.status == Call.Status.WAITING, again.error
    assert engine.saved_answers_for(pending(again)) == {KEY: {"name": "Ada"}}
    engine.answer(pending(again), {KEY: {"action": "cancel"}}, user, deliver_within=10)
    assert wait_idle(10.0)
    assert back.sessions()["active"] == 0
