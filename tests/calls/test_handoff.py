"""The process that takes an answer sends it at once (``mrtrweb.calls.handoff``).

Against the real flaky server: the answer page waits a moment for the outcome and lands the
person on it; a slow server leaves the page to say "Delivering…" while the delivery thread
finishes; the task written with the answer is only a safety net that, once due, finds the
round delivered and sends nothing.
"""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from mrtrweb.calls import handoff
from mrtrweb.calls.engine import expiry_bucket, safety_nets
from mrtrweb.calls.models import Call, Round
from mrtrweb.elicitation import prefix_for_key
from tests.calls.engine.delivery_support import (
    CONFIRM,
    DATABASE_QUEUE,
    flaky_peer,
    kinds,
    park,
    queued,
    resubmissions,
    run_tasks,
    set_fault,
)
from tests.elicitation.support import post

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _hand_off(settings: Any) -> None:
    settings.TASKS = DATABASE_QUEUE
    settings.MRTRWEB_DELIVER_ON_ANSWER = True
    settings.MRTRWEB_ANSWER_WAIT = 10.0


@pytest.fixture
def flaky(fault_peer: Any) -> Any:
    return flaky_peer(fault_peer, "handoff-tests")


def _post_answer(user: Any, round: Round) -> Any:
    client = Client()
    client.force_login(user)
    page = client.get(round.get_absolute_url())
    assert page.status_code == 200
    (key,) = round.input_requests
    data = post(prefix_for_key(key), CONFIRM)  # the fields a browser posts for these answers
    fields = {name: data.getlist(name) for name in data}
    return client.post(round.get_absolute_url(), {**fields, "action": "accept"})


def nets(task: str) -> list[DBTaskResult]:
    """The shared safety-net rows waiting (they carry no round: they look for what is due)."""
    return list(DBTaskResult.objects.filter(task_path__endswith=f".{task}", status="READY"))


def _pass_grace(round: Round) -> None:
    """As if the answer's grace had passed since it was taken."""
    Round.objects.filter(pk=round.pk).update(
        answered_at=timezone.now() - handoff.GRACE - timedelta(seconds=1)
    )


def _wait_for(round: Round, status: str, timeout: float = 15.0) -> Round:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        round.refresh_from_db()
        if round.status == status:
            return round
        time.sleep(0.02)
    return round


def test_the_answer_page_lands_on_the_result_delivered_by_its_own_process(
    flaky: Any, user: Any
) -> None:
    round = park(flaky, user)
    response = _post_answer(user, round)

    # No task worker ran: the page's own process sent the answers while the person waited.
    round.refresh_from_db()
    assert round.status == Round.Status.DELIVERED, round.delivery_error
    assert round.call.status == Call.Status.COMPLETED
    assert response.status_code == 303
    assert response["Location"] == round.call.get_absolute_url()
    assert len(resubmissions(flaky)) == 1
    assert round.answers == {
        next(iter(round.input_requests)): {"action": "accept", "content": CONFIRM}
    }

    # The safety net written with the answer is a task shared by the answers of five
    # seconds, due a step after their grace...
    (task,) = nets("deliver_unclaimed_due")
    due = (task.run_after - round.answered_at).total_seconds()
    grace, step = handoff.GRACE.total_seconds(), safety_nets.STEP.total_seconds()
    assert grace <= due <= grace + step
    assert not queued("deliver_unclaimed_round", round)
    # ... and once due it finds the round delivered and sends nothing again.
    _pass_grace(round)
    DBTaskResult.objects.filter(pk=task.pk).update(run_after=timezone.now() - timedelta(seconds=1))
    run_tasks()
    assert not nets("deliver_unclaimed_due") and not queued("deliver_unclaimed_round", round)
    assert len(resubmissions(flaky)) == 1
    assert kinds(round).count("delivered") == 1


def test_a_slow_server_leaves_the_page_to_say_delivering(
    flaky: Any, user: Any, settings: Any
) -> None:
    settings.MRTRWEB_ANSWER_WAIT = 0.3
    round = park(flaky, user)
    set_fault(flaky, "slow", delay=2)

    started = time.monotonic()
    response = _post_answer(user, round)
    waited = time.monotonic() - started

    assert response.status_code == 303
    assert response["Location"] == round.call.get_absolute_url()
    assert waited < 1.5, waited  # the page did not wait for the server
    round.refresh_from_db()
    assert round.status == Round.Status.DELIVERING
    page = Client()
    page.force_login(user)
    assert "Delivering" in page.get(round.call.get_absolute_url()).content.decode()

    # The delivery thread carries on and stores the outcome; no worker is involved.
    round = _wait_for(round, Round.Status.DELIVERED)
    assert round.status == Round.Status.DELIVERED, round.delivery_error
    assert round.call.status == Call.Status.COMPLETED
    assert len(resubmissions(flaky)) == 1


def test_without_hand_off_a_worker_delivers_the_answer(
    flaky: Any, user: Any, settings: Any
) -> None:
    settings.MRTRWEB_DELIVER_ON_ANSWER = False
    round = park(flaky, user)
    response = _post_answer(user, round)

    assert response.status_code == 303
    round.refresh_from_db()
    assert round.status == Round.Status.SUBMITTED
    (task,) = queued("deliver_round", round)
    # Due at once (django-tasks-db stores "no run_after" as the year 9999).
    assert task.run_after.year == 9999 or task.run_after <= timezone.now()
    assert resubmissions(flaky) == []
    run_tasks()
    round.refresh_from_db()
    assert round.status == Round.Status.DELIVERED
    assert len(resubmissions(flaky)) == 1


def test_a_refused_answer_waits_out_retry_after_even_when_its_safety_net_comes_due(
    flaky: Any, user: Any
) -> None:
    round = park(flaky, user)
    set_fault(flaky, "429", retry_after=30)
    _post_answer(user, round)

    # The page's own attempt was refused: the round waits 30 s for its next attempt.
    round.refresh_from_db()
    assert round.status == Round.Status.SUBMITTED
    assert round.last_http_status == 429
    wait = (round.next_attempt_at - timezone.now()).total_seconds()
    assert 25 < wait <= 30
    # The safety net comes due first: it must not send the answers early.
    (net,) = nets("deliver_unclaimed_due")
    (backoff,) = queued("deliver_round", round)
    assert backoff.run_after == round.next_attempt_at
    _pass_grace(round)
    DBTaskResult.objects.filter(pk=net.pk).update(run_after=timezone.now() - timedelta(seconds=1))
    run_tasks()
    round.refresh_from_db()
    assert round.status == Round.Status.SUBMITTED and round.attempts == 1
    assert not queued("deliver_unclaimed_round", round)
    assert resubmissions(flaky) == []
    # Once its time has come, the round goes.
    DBTaskResult.objects.filter(pk=backoff.pk).update(
        run_after=timezone.now() - timedelta(seconds=1)
    )
    Round.objects.filter(pk=round.pk).update(next_attempt_at=timezone.now())
    run_tasks()
    round.refresh_from_db()
    assert round.status == Round.Status.DELIVERED
    assert len(resubmissions(flaky)) == 1


def test_the_safety_net_sends_an_answer_whose_process_died_before_trying(
    flaky: Any, user: Any, monkeypatch: Any
) -> None:
    from concurrent.futures import Future

    def died_before_starting(work: Any, round_id: int) -> Future[None]:
        # What a process killed between the commit and its delivery thread leaves behind:
        # the answers and their safety-net task, committed, and nothing sent.
        never: Future[None] = Future()
        never.cancel()
        return never

    monkeypatch.setattr(handoff, "start", died_before_starting)
    round = park(flaky, user)
    _post_answer(user, round)
    round.refresh_from_db()
    assert round.status == Round.Status.SUBMITTED and round.attempts == 0
    assert resubmissions(flaky) == []

    (net,) = nets("deliver_unclaimed_due")
    run_tasks()  # not due yet
    assert resubmissions(flaky) == []
    # Its time comes: the net finds the answer unclaimed past its grace and sends it, once.
    _pass_grace(round)
    DBTaskResult.objects.filter(pk=net.pk).update(run_after=timezone.now() - timedelta(seconds=1))
    run_tasks()
    round.refresh_from_db()
    assert round.status == Round.Status.DELIVERED
    assert len(resubmissions(flaky)) == 1
    assert safety_nets.deliver_unclaimed_due() == 0  # a late run finds nothing left
    run_tasks()
    assert len(resubmissions(flaky)) == 1


def test_within_its_grace_an_answer_is_left_to_its_own_process(flaky: Any, user: Any) -> None:
    """The net never races the process that took the answer: an answer younger than its
    grace is not queued, even if nobody has claimed it yet."""
    round = park(flaky, user)
    Round.objects.filter(pk=round.pk).update(
        status=Round.Status.SUBMITTED, answers={}, answered_at=timezone.now()
    )
    assert safety_nets.deliver_unclaimed_due() == 0
    assert not queued("deliver_unclaimed_round", round)
    assert safety_nets.deliver_unclaimed_due(now=timezone.now() + handoff.GRACE) == 1
    assert len(queued("deliver_unclaimed_round", round)) == 1


def test_answers_of_the_same_seconds_share_one_safety_net() -> None:
    """One row per step, not one per answer; and once this process has seen it waiting,
    the next answers of the step do not even look for it."""
    # Well inside a step, so that both answers fall in it.
    now = expiry_bucket(timezone.now(), safety_nets.STEP) + timedelta(seconds=1)
    with CaptureQueriesContext(connection) as first:
        safety_nets.net_answer(now)
    with CaptureQueriesContext(connection) as second:
        safety_nets.net_answer(now + timedelta(milliseconds=1))
    (net,) = nets("deliver_unclaimed_due")
    assert len(first) >= 1 and len(second) == 0
    assert net.run_after - now > handoff.GRACE
