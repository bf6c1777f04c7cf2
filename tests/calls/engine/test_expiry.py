"""Rounds past their state lifetime, expired by the scheduler at ``expires_at`` (also
``manage.py expire_rounds``, one tick), which also requeues lost deliveries and fails calls
whose sender died.

Real rounds from the flaky peer; the tasks run through the real database queue, and the clock
is moved rather than waited for.
"""

from __future__ import annotations

from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from mrtrweb.calls import engine, handoff, tasks
from mrtrweb.calls.models import Call, Round
from tests.calls.engine.delivery_support import (
    DATABASE_QUEUE,
    answer,
    flaky_peer,
    park,
    resubmissions,
    run_tasks,
    run_until,
)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _database_queue(settings: Any) -> None:
    settings.TASKS = DATABASE_QUEUE


@pytest.fixture
def flaky(fault_peer: Any) -> Any:
    return flaky_peer(fault_peer, "expiry-tests")


def waiting_tasks() -> list[DBTaskResult]:
    return list(DBTaskResult.objects.filter(status="READY"))


def test_the_scheduler_expires_overdue_rounds_and_tells_their_assignees(
    flaky: Any, user: Any, mailoutbox: Any
) -> None:
    user.email = "ada@example.com"
    user.save()
    round = park(flaky, user)
    Round.objects.filter(pk=round.pk).update(assigned_user=user)
    # Nothing is queued for later: the round's expires_at is when it is due.
    assert waiting_tasks() == []
    out = StringIO()
    call_command("expire_rounds", stdout=out)
    assert out.getvalue().startswith("expired 0")
    Round.objects.filter(pk=round.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    call_command("expire_rounds", stdout=out)
    assert "expired 1" in out.getvalue()
    round.refresh_from_db()
    assert round.status == Round.Status.EXPIRED
    assert round.call.status == Call.Status.EXPIRED
    assert [m.to for m in mailoutbox][-1] == ["ada@example.com"]
    assert "expired" in mailoutbox[-1].subject.lower()
    # A later tick finds nothing left to do.
    assert engine.expire_if_due(round.pk) is False
    assert engine.run_due()["expired"] == 0


def test_the_scheduler_expires_a_pending_round_at_its_deadline(
    flaky: Any, user: Any, time_machine: Any
) -> None:
    round = park(flaky, user)
    time_machine.move_to(round.expires_at - timedelta(seconds=1))
    run_tasks()
    round.refresh_from_db()
    assert round.status == Round.Status.PENDING
    time_machine.move_to(round.expires_at + timedelta(milliseconds=10))
    run_tasks()
    round.refresh_from_db()
    assert round.status == Round.Status.EXPIRED
    assert round.events.get(kind="expired").detail["swept"] is True


def test_an_expiry_task_queued_per_round_still_runs(flaky: Any, user: Any) -> None:
    """Tasks the engine queued one per round before still expire their round."""
    round = park(flaky, user)
    Round.objects.filter(pk=round.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    tasks.expire_round.enqueue(round.pk)
    round = run_until(round, Round.Status.EXPIRED, timeout=10)
    assert round.status == Round.Status.EXPIRED


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("expire_rounds_due", []),
        ("sweep_rounds", []),
        ("remind_rounds_due", []),
        ("deliver_unclaimed_due", []),
        ("send_unsent_due", []),
        ("watch_deliveries_due", []),
        ("watch_calls_due", []),
        ("expire_round", [1]),
        ("watch_delivery", [1, 1]),
        ("watch_call", [1]),
        ("watch_stream", [1]),
    ],
)
def test_a_task_queued_under_a_name_the_scheduler_replaced_still_runs(
    flaky: Any, user: Any, name: str, args: list[Any]
) -> None:
    """A row queued before the scheduler, under its old task path, runs one tick of it."""
    round = park(flaky, user)
    Round.objects.filter(pk=round.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    queued = tasks.run_due_now.enqueue(*args)
    DBTaskResult.objects.filter(pk=queued.id).update(task_path=f"mrtrweb.calls.tasks.{name}")
    run_until(round, Round.Status.EXPIRED, timeout=10)
    assert DBTaskResult.objects.get(pk=queued.id).status == "SUCCESSFUL"
    round.refresh_from_db()
    assert round.status == Round.Status.EXPIRED


def test_the_scheduler_requeues_an_answered_round_whose_task_was_lost(
    flaky: Any, user: Any
) -> None:
    round = park(flaky, user)
    answer(round, user)
    DBTaskResult.objects.filter(task_path__endswith=".deliver_round").delete()
    run_tasks()
    round.refresh_from_db()
    assert round.status == Round.Status.SUBMITTED
    # Not while the process that took it may still send it; past that, queued once.
    assert engine.run_due()["requeued"] == 0
    later = timezone.now() + handoff.GRACE
    assert engine.run_due(later)["requeued"] == 1
    assert engine.run_due(later)["requeued"] == 0
    round = run_until(round, Round.Status.DELIVERED)
    assert round.status == Round.Status.DELIVERED
    assert len(resubmissions(flaky)) == 1


# -- the calls' watchdog: a due time on the call too ------------------------------------------


def test_the_calls_watchdog_fails_only_the_overdue_and_looks_again_at_the_rest(
    flaky: Any, user: Any
) -> None:
    calls = [park(flaky, user, name=f"flaky-watched-{n}").call for n in range(3)]
    assert waiting_tasks() == []
    # One call's sender died mid-request (still running, long past its deadline): the
    # watchdog fails it, and leaves the live and the parked ones alone.
    now = timezone.now()
    long_ago = now - timedelta(days=1)
    Call.objects.filter(pk=calls[0].pk).update(
        status=Call.Status.RUNNING, updated_at=long_ago, watch_at=long_ago
    )
    Call.objects.filter(pk=calls[1].pk).update(status=Call.Status.RUNNING, watch_at=long_ago)
    assert engine.run_due()["failed"] == 1
    statuses = dict(Call.objects.values_list("pk", "status"))
    assert statuses[calls[0].pk] == Call.Status.FAILED
    assert statuses[calls[1].pk] == Call.Status.RUNNING
    assert statuses[calls[2].pk] == Call.Status.WAITING
    # The live one is looked at again at its deadline.
    live = Call.objects.get(pk=calls[1].pk)
    assert live.watch_at > now
    assert engine.run_due()["failed"] == 0
