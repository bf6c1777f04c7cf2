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
from django.db.models import F
from django.test import Client
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from mrtrweb.calls import engine, handoff
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


def _pass_grace(round: Round) -> None:
    """As if the answer's grace had passed since it was taken (for the round's due time
    too)."""
    gone = handoff.GRACE + timedelta(seconds=1)
    Round.objects.filter(pk=round.pk).update(
        answered_at=F("answered_at") - gone, watch_at=F("watch_at") - gone
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

    # Nothing was queued for later with the answer...
    assert not DBTaskResult.objects.filter(status="READY").exists()
    # ... and once its grace is over the scheduler finds the round delivered: nothing again.
    _pass_grace(round)
    run_tasks()
    assert not queued("deliver_unclaimed_round", round)
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
    # The round is due then, not at its answer's grace: it must not be sent early.
    assert round.watch_at == round.next_attempt_at
    _pass_grace(round)
    run_tasks()
    round.refresh_from_db()
    assert round.status == Round.Status.SUBMITTED and round.attempts == 1
    assert not queued("deliver_unclaimed_round", round)
    assert resubmissions(flaky) == []
    # Once its time has come, the round goes.
    Round.objects.filter(pk=round.pk).update(
        next_attempt_at=timezone.now(), watch_at=timezone.now()
    )
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

    run_tasks()  # not due yet
    assert resubmissions(flaky) == []
    # Its time comes: the scheduler finds the answer unsent past its grace and sends it, once.
    _pass_grace(round)
    run_tasks()
    round.refresh_from_db()
    assert round.status == Round.Status.DELIVERED
    assert len(resubmissions(flaky)) == 1
    assert engine.run_due()["requeued"] == 0  # a late tick finds nothing left
    run_tasks()
    assert len(resubmissions(flaky)) == 1


def test_within_its_grace_an_answer_is_left_to_its_own_process(flaky: Any, user: Any) -> None:
    """The net never races the process that took the answer: an answer younger than its
    grace is not queued, even if nobody has claimed it yet."""
    round = park(flaky, user)
    now = timezone.now()
    Round.objects.filter(pk=round.pk).update(
        status=Round.Status.SUBMITTED, answers={}, answered_at=now, watch_at=now + handoff.GRACE
    )
    assert engine.run_due()["requeued"] == 0
    assert not queued("deliver_unclaimed_round", round)
    assert engine.run_due(now=now + handoff.GRACE)["requeued"] == 1
    assert len(queued("deliver_unclaimed_round", round)) == 1
    # Queued under a lease: the next ticks leave it to its task.
    assert engine.run_due(now=now + handoff.GRACE * 2)["requeued"] == 0
