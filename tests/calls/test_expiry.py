"""Rounds past their state lifetime: their own expiry task (due at ``expires_at``), and the
sweep behind it (``manage.py expire_rounds``), which also requeues lost deliveries.

Real rounds from the flaky peer; the tasks run through the real database queue.
"""

from __future__ import annotations

from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from mrtrweb.calls import engine
from mrtrweb.calls.models import Call, Round
from tests.calls.delivery_support import (
    DATABASE_QUEUE,
    answer,
    flaky_peer,
    park,
    queued,
    resubmissions,
    run_tasks,
    run_until,
)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _database_queue(settings: Any) -> None:
    settings.TASKS = DATABASE_QUEUE


@pytest.fixture
def user() -> Any:
    return get_user_model().objects.create_user("ada", password="pw-ada-123")


@pytest.fixture
def flaky(fault_peer: Any) -> Any:
    return flaky_peer(fault_peer, "expiry-tests")


def test_the_sweep_expires_overdue_rounds_and_tells_their_assignees(
    flaky: Any, user: Any, mailoutbox: Any
) -> None:
    user.email = "ada@example.com"
    user.save()
    round = park(flaky, user)
    Round.objects.filter(pk=round.pk).update(assigned_user=user)
    # Its own expiry task is due when its state dies.
    (task,) = queued("expire_round", round)
    assert task.run_after == round.expires_at
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
    # The round's own task, when it comes, finds nothing left to do.
    assert engine.expire_if_due(round.pk) is False


def test_the_expiry_task_expires_a_pending_round_at_its_deadline(flaky: Any, user: Any) -> None:
    round = park(flaky, user)
    Round.objects.filter(pk=round.pk).update(expires_at=timezone.now() + timedelta(seconds=1))
    DBTaskResult.objects.filter(task_path__endswith=".expire_round").update(
        run_after=timezone.now() + timedelta(seconds=1)
    )
    run_tasks()
    round.refresh_from_db()
    assert round.status == Round.Status.PENDING
    round = run_until(round, Round.Status.EXPIRED, timeout=10)
    assert round.status == Round.Status.EXPIRED
    assert round.events.get(kind="expired").detail["swept"] is True


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
