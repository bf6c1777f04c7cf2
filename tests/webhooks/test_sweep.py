"""Deliveries whose task was lost are found by the scheduler once due, and delivered once."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from mrtrweb.api.models import ApiToken
from mrtrweb.calls import engine
from mrtrweb.calls.models import Call
from mrtrweb.servers.models import Connection
from mrtrweb.webhooks import subscribe
from mrtrweb.webhooks.due import send_due
from mrtrweb.webhooks.models import Delivery
from mrtrweb.webhooks.sending import in_flight_until
from mrtrweb.webhooks.tasks import schedule
from tests.support.factories import make_user

from .receiver import running_receiver

pytestmark = pytest.mark.django_db(transaction=True)

SEND_TASK = "mrtrweb.webhooks.tasks.send_delivery"


@pytest.fixture(autouse=True)
def hooks(settings: Any) -> None:
    settings.MRTRWEB_WEBHOOK_ALLOW_PRIVATE = True
    settings.MRTRWEB_WEBHOOK_BACKOFF = 60
    settings.MRTRWEB_WEBHOOK_BACKOFF_MAX = 900
    settings.MRTRWEB_WEBHOOK_TIMEOUT = 2


def lose_the_queue() -> None:
    """What a queue that was down, or a worker killed with its tasks, leaves behind."""
    DBTaskResult.objects.filter(task_path=SEND_TASK).delete()


def run_queued() -> int:
    rows = list(DBTaskResult.objects.filter(task_path=SEND_TASK, status="READY"))
    for row in rows:
        DBTaskResult.objects.filter(pk=row.pk).update(status="SUCCESSFUL")
        row.task.call(*row.args_kwargs["args"], **row.args_kwargs["kwargs"])
    return len(rows)


def test_lost_deliveries_are_queued_again_and_sent_once(fastmcp_peer: Any) -> None:
    user = make_user("ada")
    token = ApiToken.issue(user, "ci")[0]
    conn = Connection.objects.create(name="peer", url=fastmcp_peer.url)
    call = engine.start_call(
        connection=conn,
        method=Call.Method.TOOL,
        target="echo",
        arguments={"text": "hi"},
        user=user,
    )
    with running_receiver(token.webhook_secret, plan=[503, 200]) as rx:
        subscribe(call, rx.url(), token)
        lose_the_queue()
        delivery = Delivery.objects.get()
        # Too recent to call lost: its task may still be on its way.
        assert send_due() == 0
        later = timezone.now() + timedelta(minutes=5)
        assert send_due(now=later) == 1
        assert send_due(now=later) == 0  # queued under a lease: once
        assert run_queued() == 1
        assert [r.answered for r in rx.received] == [503]

        # The retry is a due time, queued by the scheduler once it has come, not before.
        delivery.refresh_from_db()
        assert delivery.next_attempt_at is not None
        assert send_due(now=delivery.next_attempt_at - timedelta(seconds=1)) == 0
        out = StringIO()
        Delivery.objects.filter(pk=delivery.pk).update(
            next_attempt_at=timezone.now() - timedelta(minutes=5)
        )
        call_command("sweep_webhooks", stdout=out)
        assert out.getvalue().strip() == "requeued 1"
        # Two tasks for one attempt (the scheduler's and a late one) send it once.
        schedule(delivery.pk)
        assert run_queued() == 2
    assert [r.answered for r in rx.received] == [503, 200]
    assert Delivery.objects.get().status == Delivery.Status.DELIVERED
    assert send_due(now=timezone.now() + timedelta(days=1)) == 0


def test_an_attempt_in_flight_is_only_taken_for_lost_after_its_timeout(
    fastmcp_peer: Any,
) -> None:
    user = make_user("ada")
    token = ApiToken.issue(user, "ci")[0]
    conn = Connection.objects.create(name="peer", url=fastmcp_peer.url)
    call = engine.start_call(
        connection=conn, method=Call.Method.TOOL, target="echo", arguments={}, user=user
    )
    subscribe(call, "http://127.0.0.1:9/hook", token)
    lose_the_queue()
    # A worker claimed the first attempt and died before recording anything: its claim made
    # the delivery due again once the attempt's timeout (2 s) and a lease (60 s) are over.
    claimed = timezone.now()
    Delivery.objects.update(attempts=1, next_attempt_at=in_flight_until(claimed))
    assert send_due(now=claimed + timedelta(seconds=61)) == 0
    assert send_due(now=claimed + timedelta(seconds=63)) == 1
