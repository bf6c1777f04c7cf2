"""Rounds past their state lifetime: the expiry task (one per minute of deadlines, due at or
just after ``expires_at``), and the sweep behind it (``manage.py expire_rounds``), which also
requeues lost deliveries.

Real rounds from the flaky peer; the tasks run through the real database queue.
"""

from __future__ import annotations

from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from mrtrweb.calls import engine, tasks
from mrtrweb.calls.engine import batching, expiry_bucket
from mrtrweb.calls.models import Call, Round
from mrtrweb.servers.models import Connection
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


def expiry_tasks() -> list[DBTaskResult]:
    return list(
        DBTaskResult.objects.filter(task_path__endswith=".expire_rounds_due", status="READY")
    )


def test_the_sweep_expires_overdue_rounds_and_tells_their_assignees(
    flaky: Any, user: Any, mailoutbox: Any
) -> None:
    user.email = "ada@example.com"
    user.save()
    round = park(flaky, user)
    Round.objects.filter(pk=round.pk).update(assigned_user=user)
    # An expiry task is due at the first whole minute at or after its state dies.
    (task,) = expiry_tasks()
    assert task.run_after == expiry_bucket(round.expires_at)
    assert round.expires_at <= task.run_after < round.expires_at + timedelta(minutes=1)
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
    # The expiry task, when it comes, finds nothing left to do.
    assert engine.expire_if_due(round.pk) is False
    assert engine.sweep(only_expire=True)["expired"] == 0


def test_rounds_whose_state_dies_in_the_same_minute_share_one_expiry_task(
    flaky: Any, user: Any, settings: Any
) -> None:
    first = park(flaky, user)
    rounds = [first] + [park(flaky, user, name=f"flaky-{n}") for n in range(3)]
    buckets = {expiry_bucket(r.expires_at) for r in rounds}
    # One task row per minute of deadlines, not one per round (the lifetime is an hour, so
    # the four rounds' deadlines fall in one or two minutes).
    assert len(expiry_tasks()) == len(buckets) <= 2
    assert {t.run_after for t in expiry_tasks()} == buckets
    # A step about to come is not shared: its task may be running already. (The tasks above
    # are cleared first: with a day's step, the rounds below share midnight's bucket, which
    # one of the minute buckets above is too when this runs just before 23:00 UTC.)
    DBTaskResult.objects.filter(task_path__endswith=".expire_rounds_due").delete()
    settings.MRTRWEB_EXPIRY_STEP = 3600.0 * 24
    Connection.objects.update(state_lifetime=timedelta(seconds=1))
    soon_rounds = [park(flaky, user, name=f"flaky-soon-{n}") for n in range(2)]
    soon = expiry_tasks()
    assert len(soon) == 2
    assert {t.run_after for t in soon} == {expiry_bucket(r.expires_at) for r in soon_rounds}


def test_a_step_seen_waiting_is_not_read_again(flaky: Any, user: Any) -> None:
    """The rounds whose state dies in one step share its row, and this process writes it
    once: later rounds of the step neither look for it nor write another."""
    rounds = [park(flaky, user, name=f"flaky-seen-{n}") for n in range(2)]
    step = expiry_bucket(rounds[0].expires_at)
    assert [t.run_after for t in expiry_tasks()].count(step) == 1
    with CaptureQueriesContext(connection) as queries:
        batching.schedule_batched("expire_rounds_due", rounds[0].expires_at)
    assert len(queries) == 0
    assert [t.run_after for t in expiry_tasks()].count(step) == 1
    # Another process (nothing written) reads nothing of the task backend's table: it writes
    # a row of its own for the step, and writes it once.
    batching.forget_waiting()
    for _ in range(2):
        batching.schedule_batched("expire_rounds_due", rounds[0].expires_at)
    assert [t.run_after for t in expiry_tasks()].count(step) == 2


def test_a_step_written_in_a_transaction_rolled_back_is_written_again() -> None:
    """What this process remembers is what was committed: a row rolled back with the round it
    was written for is not taken for one waiting."""
    far = timezone.now() + timedelta(hours=3)
    with pytest.raises(RuntimeError), transaction.atomic():
        batching.schedule_batched("expire_rounds_due", far)
        assert len(expiry_tasks()) == 1
        raise RuntimeError("the round's transaction failed")
    assert expiry_tasks() == []
    batching.schedule_batched("expire_rounds_due", far)
    assert [t.run_after for t in expiry_tasks()] == [expiry_bucket(far)]


def test_the_expiry_task_expires_a_pending_round_at_its_deadline(flaky: Any, user: Any) -> None:
    round = park(flaky, user)
    Round.objects.filter(pk=round.pk).update(expires_at=timezone.now() + timedelta(seconds=1))
    DBTaskResult.objects.filter(task_path__endswith=".expire_rounds_due").update(
        run_after=timezone.now() + timedelta(seconds=1)
    )
    run_tasks()
    round.refresh_from_db()
    assert round.status == Round.Status.PENDING
    round = run_until(round, Round.Status.EXPIRED, timeout=10)
    assert round.status == Round.Status.EXPIRED
    assert round.events.get(kind="expired").detail["swept"] is True


def test_an_expiry_task_queued_per_round_still_runs(flaky: Any, user: Any) -> None:
    """Tasks the engine queued one per round before still expire their round."""
    round = park(flaky, user)
    Round.objects.filter(pk=round.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    tasks.expire_round.enqueue(round.pk)
    round = run_until(round, Round.Status.EXPIRED, timeout=10)
    assert round.status == Round.Status.EXPIRED


def test_the_sweep_requeues_an_answered_round_whose_task_was_lost(
    flaky: Any, user: Any, settings: Any
) -> None:
    settings.MRTRWEB_DELIVERY_GRACE = 0.0
    round = park(flaky, user)
    answer(round, user)
    DBTaskResult.objects.filter(task_path__endswith=".deliver_round").delete()
    run_tasks()
    round.refresh_from_db()
    assert round.status == Round.Status.SUBMITTED
    assert engine.sweep()["requeued"] == 1
    round = run_until(round, Round.Status.DELIVERED)
    assert round.status == Round.Status.DELIVERED
    assert len(resubmissions(flaky)) == 1


# -- the calls' watchdog: one task per minute of deadlines too ------------------------------


def test_calls_share_one_watchdog_task_per_minute_which_fails_only_the_overdue(
    flaky: Any, user: Any
) -> None:
    calls = [park(flaky, user, name=f"flaky-watched-{n}").call for n in range(3)]
    watchdogs = DBTaskResult.objects.filter(task_path__endswith=".watch_calls_due")
    # Each first request made sure the watchdog runs after its deadline: one row per minute
    # of deadlines (the three fall in one or two), none per call.
    assert 1 <= watchdogs.filter(status="READY").count() <= 2
    assert not DBTaskResult.objects.filter(task_path__endswith=".watch_call").exists()
    # One call's sender died mid-request (still running, long past its deadline): the
    # watchdog fails it, and leaves the live and the parked ones alone.
    long_ago = timezone.now() - timedelta(days=1)
    Call.objects.filter(pk=calls[0].pk).update(status=Call.Status.RUNNING, updated_at=long_ago)
    Call.objects.filter(pk=calls[1].pk).update(status=Call.Status.RUNNING)
    watchdogs.delete()
    # Rows deleted by hand: this process saw them waiting (calls.engine.batching).
    batching.forget_waiting()
    assert engine.check_calls_due() == 1
    statuses = dict(Call.objects.values_list("pk", "status"))
    assert statuses[calls[0].pk] == Call.Status.FAILED
    assert statuses[calls[1].pk] == Call.Status.RUNNING
    assert statuses[calls[2].pk] == Call.Status.WAITING
    # The live one is looked at again once it is due.
    assert watchdogs.filter(status="READY").count() == 1
