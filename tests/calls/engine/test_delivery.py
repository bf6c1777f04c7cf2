"""Delivery failures against real misbehaving servers (``tests.peers.faults --mode flaky``).

*Not delivered* (refused, 503, 429) is retried by tasks with backoff and jitter within the
round's state lifetime; *outcome unknown* (stall, broken stream, garbage) is never resent
blindly: the round waits for an admin, unless the tool is idempotent (resent once). The
tasks run through the real database queue: ``manage.py db_worker --batch`` in this process.
"""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from mrtrweb.calls import engine, tasks
from mrtrweb.calls.engine import resubmitting
from mrtrweb.calls.models import Call, Round
from mrtrweb.servers.models import Connection
from tests.calls.engine.delivery_support import (
    DATABASE_QUEUE,
    answer,
    flaky_peer,
    kinds,
    park,
    queued,
    resubmissions,
    run_tasks,
    run_until,
    set_fault,
)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _fast_backoff(settings: Any) -> None:
    settings.TASKS = DATABASE_QUEUE
    settings.MRTRWEB_DELIVERY_BACKOFF = 0.2
    settings.MRTRWEB_DELIVERY_BACKOFF_MAX = 1.0
    settings.MRTRWEB_DELIVERY_ATTEMPTS = 8


@pytest.fixture
def admin() -> Any:
    return get_user_model().objects.create_superuser("root", password="pw-root-123")


@pytest.fixture
def flaky(fault_peer: Any) -> Any:
    """The shared flaky server, with no fault set and its record cleared."""
    return flaky_peer(fault_peer, "delivery-tests")


@pytest.mark.parametrize("status", ["503", "429"])
def test_a_busy_server_is_retried_with_backoff_until_it_recovers(
    flaky: Any, user: Any, status: str
) -> None:
    round = park(flaky, user)
    set_fault(flaky, status, times=2)
    answers = answer(round, user)

    round = run_until(round, Round.Status.DELIVERED)
    assert round.status == Round.Status.DELIVERED, round.delivery_error
    assert round.call.status == Call.Status.COMPLETED
    assert round.attempts == 3
    assert round.answers == answers
    # The two refusals never reached the tool; the third attempt ran it once.
    assert len(resubmissions(flaky)) == 1
    retries = round.events.filter(kind="delivery_retry_scheduled").order_by("id")
    assert [e.detail["attempt"] for e in retries] == [1, 2]
    assert {e.detail["http_status"] for e in retries} == {int(status)}
    # Backoff doubles (0.2 s then 0.4 s), with jitter taking at most half of each.
    waits = [
        (timezone.datetime.fromisoformat(e.detail["retry_at"]) - e.created_at).total_seconds()
        for e in retries
    ]
    assert 0.09 <= waits[0] <= 0.21 and 0.19 <= waits[1] <= 0.41, waits
    assert round.events.get(kind="delivered").detail["attempt"] == 3


def test_retry_after_is_honoured_and_is_the_rounds_due_time(flaky: Any, user: Any) -> None:
    round = park(flaky, user)
    set_fault(flaky, "429", retry_after=2)
    answer(round, user)
    run_tasks()  # the first attempt: refused
    round.refresh_from_db()
    assert round.status == Round.Status.SUBMITTED
    assert round.last_http_status == 429 and "ServerBusy" in round.delivery_error
    wait = (round.next_attempt_at - timezone.now()).total_seconds()
    assert 1.5 < wait <= 2.0
    # Nothing queued for later: the round is due then, and the scheduler queues it.
    assert round.watch_at == round.next_attempt_at
    assert not queued("deliver_round", round)
    run_tasks()  # not due yet: nothing is sent
    assert len(resubmissions(flaky)) == 0
    round = run_until(round, Round.Status.DELIVERED)
    assert round.status == Round.Status.DELIVERED
    assert len(resubmissions(flaky)) == 1


@pytest.mark.parametrize(
    "junk", ["\xb2", "abc", "-5", "1.5", "99999999999999999999", "9" * 5000, "Mon, 32 Jan 2020"]
)
def test_a_junk_retry_after_is_as_if_absent_and_the_round_is_retried(
    flaky: Any, user: Any, junk: str
) -> None:
    round = park(flaky, user)
    set_fault(flaky, "503", retry_after=junk)
    answer(round, user)
    run_tasks()  # the first attempt: refused, nothing ran
    round.refresh_from_db()
    assert round.status == Round.Status.SUBMITTED, round.delivery_error
    assert round.last_http_status == 503 and "ServerBusy" in round.delivery_error
    (retry,) = round.events.filter(kind="delivery_retry_scheduled")
    assert retry.detail["retry_after"] is None  # the backoff's own wait, not the header's
    round = run_until(round, Round.Status.DELIVERED)
    assert round.status == Round.Status.DELIVERED, round.delivery_error
    assert len(resubmissions(flaky)) == 1


def test_a_refusing_server_is_retried_and_delivered_once_it_is_back(
    peer_factory: Any, user: Any
) -> None:
    first = peer_factory("faults", "--mode", "flaky", "--state-key", "refuse-test")
    round = park(first, user)
    first.stop()  # the port is closed now: connections are refused
    answers = answer(round, user)
    run_tasks()
    round.refresh_from_db()
    assert round.status == Round.Status.SUBMITTED
    assert "NotDelivered" in round.delivery_error and round.last_http_status is None
    assert round.answers == answers

    back = peer_factory("faults", "--mode", "flaky", "--state-key", "refuse-test")
    Connection.objects.filter(pk=round.call.connection_id).update(url=back.url)
    round = run_until(round, Round.Status.DELIVERED)
    assert round.status == Round.Status.DELIVERED
    assert round.call.status == Call.Status.COMPLETED
    assert len(resubmissions(back)) == 1


def test_retries_stop_at_the_attempts_budget_and_keep_the_answers(
    flaky: Any, user: Any, settings: Any
) -> None:
    settings.MRTRWEB_DELIVERY_ATTEMPTS = 3
    round = park(flaky, user)
    set_fault(flaky, "503", times=100)
    answers = answer(round, user)
    round = run_until(round, Round.Status.FAILED)
    assert round.status == Round.Status.FAILED
    assert round.attempts == 3
    assert round.answers == answers
    assert round.events.get(kind="delivery_failed").detail["gave_up"] == "3 attempts"
    assert round.call.status == Call.Status.WAITING
    # A person can still retry it (a fresh budget), and it goes through once the server is ok.
    set_fault(flaky, None)
    engine.retry_delivery(round, user)
    round = run_until(round, Round.Status.DELIVERED)
    assert round.status == Round.Status.DELIVERED
    assert len(resubmissions(flaky)) == 1


def test_retries_never_outlive_the_state_lifetime(flaky: Any, user: Any, settings: Any) -> None:
    settings.MRTRWEB_DELIVERY_BACKOFF = 5.0
    settings.MRTRWEB_DELIVERY_BACKOFF_MAX = 5.0
    round = park(flaky, user)
    Round.objects.filter(pk=round.pk).update(expires_at=timezone.now() + timedelta(seconds=2))
    set_fault(flaky, "503", times=100)
    answer(round, user)
    run_tasks()
    round.refresh_from_db()
    assert round.status == Round.Status.FAILED
    assert round.attempts == 1
    assert "lifetime" in round.events.get(kind="delivery_failed").detail["gave_up"]
    assert not queued("deliver_round", round)


@pytest.mark.parametrize("fault", ["stall", "drop", "garbage"])
def test_an_unknown_outcome_is_flagged_for_an_admin_never_resent(
    flaky: Any, user: Any, admin: Any, fault: str
) -> None:
    round = park(flaky, user, read_timeout=1.0)
    set_fault(flaky, fault)
    answers = answer(round, user)
    round = run_until(round, Round.Status.UNKNOWN, Round.Status.DELIVERED)
    assert round.status == Round.Status.UNKNOWN
    assert round.flagged_at is not None and round.attempts == 1
    assert ("ProtocolError" if fault == "garbage" else "OutcomeUnknown") in round.delivery_error
    assert round.answers == answers
    assert round.call.status == Call.Status.WAITING
    event = round.events.get(kind="outcome_unknown")
    assert event.detail["resent_automatically"] is False
    # Nothing is queued to send it again; more worker passes send nothing.
    assert not queued("deliver_round", round)
    run_tasks()
    assert len(resubmissions(flaky)) == 1

    # The admin decides to resend: once, even when two of them click.
    engine.resend(round, admin)
    with pytest.raises(engine.AlreadyAnswered):
        engine.resend(round, admin)
    round = run_until(round, Round.Status.DELIVERED)
    assert round.status == Round.Status.DELIVERED
    assert round.call.status == Call.Status.COMPLETED
    assert len(resubmissions(flaky)) == 2
    assert kinds(round)[-3:] == ["outcome_unknown", "resent", "delivered"]


def test_an_admin_can_abandon_a_flagged_round(flaky: Any, user: Any, admin: Any) -> None:
    round = park(flaky, user, read_timeout=1.0)
    set_fault(flaky, "drop")
    answers = answer(round, user)
    round = run_until(round, Round.Status.UNKNOWN)
    engine.abandon_flagged(round, admin)
    round.refresh_from_db()
    assert round.status == Round.Status.CANCELLED
    assert round.answers == answers
    assert round.call.status == Call.Status.CANCELLED
    assert round.events.get(kind="abandoned").actor == admin
    with pytest.raises(engine.AlreadyAnswered):
        engine.resend(round, admin)
    run_tasks()
    assert len(resubmissions(flaky)) == 1


def test_an_idempotent_tool_is_resent_once_automatically(flaky: Any, user: Any) -> None:
    round = park(flaky, user, tool="set_flag", read_timeout=1.0)
    assert round.call.tool["annotations"]["idempotentHint"] is True
    set_fault(flaky, "drop")
    answer(round, user)
    round = run_until(round, Round.Status.DELIVERED)
    assert round.status == Round.Status.DELIVERED
    assert round.auto_resent is True and round.attempts == 2
    assert round.events.get(kind="outcome_unknown").detail["resent_automatically"] is True
    assert len(resubmissions(flaky)) == 2


def test_an_idempotent_tool_is_resent_only_once(flaky: Any, user: Any) -> None:
    round = park(flaky, user, tool="set_flag", read_timeout=1.0)
    set_fault(flaky, "stall", times=5)
    answer(round, user)
    round = run_until(round, Round.Status.UNKNOWN)
    assert round.status == Round.Status.UNKNOWN
    assert round.attempts == 2
    run_tasks()
    assert len(resubmissions(flaky)) == 2


def test_a_delivery_whose_sender_died_is_flagged_by_its_watchdog(
    flaky: Any, user: Any, settings: Any, time_machine: Any
) -> None:
    settings.MRTRWEB_DELIVERY_GRACE = 0.5
    round = park(flaky, user, connect_timeout=0.5, read_timeout=0.5, answer_deadline=0.5)
    answer(round, user)
    # What a worker killed right after claiming leaves behind: the claim, which holds when
    # the watchdog first looks (once the attempt could have ended).
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(resubmitting, "run", lambda *args, **kwargs: None)
        run_tasks()
    round.refresh_from_db()
    assert round.status == Round.Status.DELIVERING
    assert abs(round.watch_at - round.delivering_since - timedelta(seconds=0.5)) < timedelta(
        seconds=0.2
    )
    assert not DBTaskResult.objects.filter(status="READY").exists()
    engine.check_delivery(round.pk, round.attempts)  # too early: it looks again at the deadline
    round.refresh_from_db()
    assert round.status == Round.Status.DELIVERING
    assert round.watch_at == round.delivering_since + timedelta(seconds=1.5)
    time_machine.move_to(round.watch_at + timedelta(milliseconds=10))
    run_tasks()
    round.refresh_from_db()
    assert round.status == Round.Status.UNKNOWN
    assert "stopped" in round.delivery_error
    assert len(resubmissions(flaky)) == 0


def test_deliveries_are_watched_at_their_due_times_which_flags_only_the_overdue(
    flaky: Any, user: Any
) -> None:
    rounds = [park(flaky, user, name=f"flaky-watched-{n}") for n in range(2)]
    for round in rounds:
        answer(round, user)
    # Two workers killed right after claiming: nothing queued for later.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(resubmitting, "run", lambda *args, **kwargs: None)
        run_tasks()
    assert not DBTaskResult.objects.filter(status="READY").exists()
    first, second = (Round.objects.get(pk=r.pk) for r in rounds)
    assert first.status == second.status == Round.Status.DELIVERING
    # The first one's sender died long ago: flagged; the second is left to its deadline.
    long_ago = timezone.now() - timedelta(days=1)
    Round.objects.filter(pk=first.pk).update(delivering_since=long_ago, watch_at=long_ago)
    assert engine.run_due()["flagged"] == 1
    first.refresh_from_db()
    second.refresh_from_db()
    assert first.status == Round.Status.UNKNOWN and "stopped" in first.delivery_error
    assert second.status == Round.Status.DELIVERING
    # A watchdog row queued per attempt by an older version still runs (the upgrade made
    # every attempt in flight due: calls' migration 0018).
    Round.objects.filter(pk=second.pk).update(delivering_since=long_ago, watch_at=long_ago)
    tasks.watch_delivery.enqueue(second.pk, second.attempts)
    second = run_until(second, Round.Status.UNKNOWN, timeout=10)
    assert second.status == Round.Status.UNKNOWN
    assert len(resubmissions(flaky)) == 0


def test_a_late_answer_settles_a_flagged_round_and_a_stale_one_is_ignored(
    flaky: Any, user: Any, admin: Any
) -> None:
    round = park(flaky, user, read_timeout=10.0)
    set_fault(flaky, "slow", delay=1.5)
    answer(round, user)
    slow = threading.Thread(target=engine.resubmit, args=(round.pk,))
    slow.start()
    while Round.objects.get(pk=round.pk).status != Round.Status.DELIVERING:
        time.sleep(0.02)
    # The watchdog gives up on the sender (as if it had died) while it is still waiting...
    assert engine.check_delivery(round.pk, 1, now=timezone.now() + timedelta(hours=1))
    round.refresh_from_db()
    assert round.status == Round.Status.UNKNOWN
    slow.join()
    # ...and then its answer arrives: the outcome is known after all.
    round.refresh_from_db()
    assert round.status == Round.Status.DELIVERED and round.flagged_at is None
    assert round.call.status == Call.Status.COMPLETED

    # The same, but the admin resent it meanwhile: the newer attempt wins, the old is dropped.
    second = park(flaky, user, tool="confirm_delete", name="second", read_timeout=10.0)
    set_fault(flaky, "slow", delay=1.5)
    answer(second, user)
    slow = threading.Thread(target=engine.resubmit, args=(second.pk,))
    slow.start()
    while Round.objects.get(pk=second.pk).status != Round.Status.DELIVERING:
        time.sleep(0.02)
    assert engine.check_delivery(second.pk, 1, now=timezone.now() + timedelta(hours=1))
    engine.resend(second, admin)
    second = run_until(second, Round.Status.DELIVERED)
    slow.join()
    second.refresh_from_db()
    assert second.status == Round.Status.DELIVERED
    assert "late_answer_ignored" in kinds(second)
    assert kinds(second).count("delivered") == 1
    assert second.call.events.filter(kind="completed").count() == 1
    assert second.call.rounds.count() == 1
