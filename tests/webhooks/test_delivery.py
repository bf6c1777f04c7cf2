"""Webhooks end to end: the real engine against a real MCP peer, a real receiving server on
127.0.0.1 that verifies every signature, and the task queue for retries."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timedelta
from email.utils import format_datetime
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from mrtrweb.api.models import ApiToken
from mrtrweb.calls import engine
from mrtrweb.calls.models import Call, Event
from mrtrweb.policies.models import Policy
from mrtrweb.servers.models import Connection
from mrtrweb.webhooks import InvalidWebhookURL, subscribe
from mrtrweb.webhooks.due import send_due
from mrtrweb.webhooks.models import Delivery, Subscription
from tests.api.support import api_for

from .receiver import STALL, running_receiver

pytestmark = pytest.mark.django_db(transaction=True)

SEND_TASK = "mrtrweb.webhooks.tasks.send_delivery"


@pytest.fixture(autouse=True)
def hooks(settings: Any) -> None:
    settings.MRTRWEB_WEBHOOK_ALLOW_PRIVATE = True
    settings.MRTRWEB_WEBHOOK_BACKOFF = 0
    settings.MRTRWEB_WEBHOOK_TIMEOUT = 2
    settings.MRTRWEB_WEBHOOK_MAX_ATTEMPTS = 6
    settings.MRTRWEB_BASE_URL = "https://mrtr.example"


@pytest.fixture
def token(user: Any) -> ApiToken:
    return ApiToken.issue(user, "ci")[0]


@pytest.fixture
def conn(fastmcp_peer: Any) -> Connection:
    return Connection.objects.create(name="peer", url=fastmcp_peer.url)


def start(conn: Connection, user: Any, tool: str, arguments: dict[str, Any]) -> Call:
    return engine.start_call(
        connection=conn, method=Call.Method.TOOL, target=tool, arguments=arguments, user=user
    )


def webhook_events(call: Call) -> list[Event]:
    return list(call.events.filter(kind__startswith="webhook_").order_by("pk"))


def run_queued() -> list[DBTaskResult]:
    """Run the queued webhook attempts now, whatever their run_after (a worker would wait)."""
    rows = list(DBTaskResult.objects.filter(task_path=SEND_TASK, status="READY"))
    for row in rows:
        DBTaskResult.objects.filter(pk=row.pk).update(status="SUCCESSFUL")
        row.task.call(*row.args_kwargs["args"], **row.args_kwargs["kwargs"])
    return rows


def test_a_pending_rounds_deadline_is_the_one_its_page_and_the_api_give(
    conn: Connection, user: Any, token: ApiToken, inline_tasks: None
) -> None:
    # Under renewal the server's state (ten minutes) is renewed behind the person's week.
    Policy.objects.create(connection=conn, renew_expired=True, renew_unsafe=True)
    call = start(conn, user, "purchase", {"item": "tea", "quantity": 2})
    round = call.rounds.get()
    assert round.renew_until is not None and round.expires_at < round.renew_until
    with running_receiver(token.webhook_secret) as rx:
        subscribe(call, rx.url(), token)
    (pending,) = (r.json for r in rx.received)
    (shown,) = api_for(user).get(f"/calls/{call.pk}").json()["rounds"]
    told = pending["round"]["expiresAt"]
    assert datetime.fromisoformat(told) == datetime.fromisoformat(shown["expiresAt"])
    assert datetime.fromisoformat(told) == round.answer_by == round.renew_until


def test_a_program_hears_each_pending_round_then_the_result(
    conn: Connection, user: Any, token: ApiToken, inline_tasks: None
) -> None:
    call = start(conn, user, "purchase", {"item": "tea", "quantity": 2})
    first = call.rounds.get()
    with running_receiver(token.webhook_secret) as rx:
        # The first round was parked before the program could subscribe: it comes now.
        subscribe(call, rx.url(), token)
        engine.answer(
            first, {"shipping": {"action": "accept", "content": {"address": "1 Main St"}}}, user
        )
        second = call.rounds.get(index=2)
        engine.answer(second, {"payment": {"action": "accept", "content": {"confirm": True}}}, user)
    call.refresh_from_db()
    assert call.status == Call.Status.COMPLETED, call.error
    assert rx.events() == ["round.pending", "round.pending", "call.finished"]
    # The standardwebhooks library accepts each delivery, and so does X-Mrtr-Signature.
    assert all(r.standard_verified and r.legacy_verified for r in rx.received)
    for r in rx.received:
        assert r.headers["webhook-id"] == r.headers["x-mrtr-delivery"] == r.json["id"]
        assert r.headers["webhook-timestamp"] == r.headers["x-mrtr-signature"][2:12]
    pending1, pending2, finished = (r.json for r in rx.received)
    assert pending1["round"]["id"] == first.pk and pending2["round"]["id"] == second.pk
    assert list(pending1["round"]["inputRequests"]) == ["shipping"]
    assert list(pending2["round"]["inputRequests"]) == ["payment"]
    assert pending1["round"]["url"] == f"https://mrtr.example/rounds/{first.pk}/"
    assert pending1["call"] == {
        "id": call.pk,
        "status": "waiting",
        "method": "tools/call",
        "target": "purchase",
        "url": f"https://mrtr.example/calls/{call.pk}/",
        "apiUrl": f"https://mrtr.example/api/v1/calls/{call.pk}",
    }
    assert finished["call"]["status"] == "completed"
    assert finished["call"]["result"]["structuredContent"]["status"] == "purchased"
    assert finished["call"]["error"] is None
    for received in rx.received:
        assert received.headers["content-type"] == "application/json"
        assert received.headers["x-mrtr-delivery"] == received.json["id"]
        assert received.headers["x-mrtr-event"] == received.json["type"]
        assert received.path == "/hook"
        # requestState and credentials never leave mrtrweb.
        assert b"requestState" not in received.body
        for round in (first, second):
            round.refresh_from_db()
            assert round.request_state.encode() not in received.body
    trail = webhook_events(call)
    assert [e.kind for e in trail] == ["webhook_delivered"] * 3
    assert {e.detail["host"] for e in trail} == {"127.0.0.1"}
    assert [e.detail["http_status"] for e in trail] == [200, 200, 200]
    assert token.webhook_secret not in json.dumps([e.detail for e in trail])
    assert set(Delivery.objects.values_list("status", "attempts")) == {("delivered", 1)}


def test_a_failed_attempt_is_retried_and_delivered(
    conn: Connection, user: Any, token: ApiToken, inline_tasks: None
) -> None:
    call = start(conn, user, "echo", {"text": "hi"})
    assert call.status == Call.Status.COMPLETED
    with running_receiver(token.webhook_secret, plan=[500, 200]) as rx:
        subscribe(call, rx.url(), token)
    assert [r.answered for r in rx.received] == [500, 200]
    assert all(r.verified for r in rx.received)
    # The same delivery, body and id on the retry; signed afresh.
    assert rx.received[0].body == rx.received[1].body
    assert rx.received[0].headers["x-mrtr-delivery"] == rx.received[1].headers["x-mrtr-delivery"]
    assert rx.received[0].headers["webhook-id"] == rx.received[1].headers["webhook-id"]
    assert [r.headers["x-mrtr-attempt"] for r in rx.received] == ["1", "2"]
    delivery = Delivery.objects.get()
    assert delivery.status == Delivery.Status.DELIVERED and delivery.attempts == 2
    assert [h["status_code"] for h in delivery.history] == [500, 200]
    failed, delivered = webhook_events(call)
    assert failed.kind == "webhook_failed"
    assert failed.detail["http_status"] == 500 and failed.detail["gave_up"] is False
    assert failed.detail["attempt"] == 1
    assert delivered.kind == "webhook_delivered" and delivered.detail["attempt"] == 2


@pytest.mark.parametrize("status", [408, 429, 502, 503])
def test_transient_answers_are_retried(
    conn: Connection, user: Any, token: ApiToken, inline_tasks: None, status: int
) -> None:
    call = start(conn, user, "echo", {"text": "hi"})
    with running_receiver(token.webhook_secret, plan=[status]) as rx:
        subscribe(call, rx.url(), token)
    assert [r.answered for r in rx.received] == [status, 200]
    assert Delivery.objects.get().status == Delivery.Status.DELIVERED


@pytest.mark.parametrize("status", [400, 404, 410, 302])
def test_a_permanent_refusal_gives_up_at_once(
    conn: Connection, user: Any, token: ApiToken, inline_tasks: None, status: int
) -> None:
    call = start(conn, user, "echo", {"text": "hi"})
    with running_receiver(token.webhook_secret, plan=[status]) as rx:
        subscribe(call, rx.url(), token)
    assert len(rx.received) == 1
    delivery = Delivery.objects.get()
    assert delivery.status == Delivery.Status.FAILED and delivery.attempts == 1
    assert delivery.last_status_code == status
    (event,) = webhook_events(call)
    assert event.kind == "webhook_failed"
    assert event.detail["gave_up"] is True and event.detail["http_status"] == status


def test_attempts_are_bounded(
    conn: Connection, user: Any, token: ApiToken, inline_tasks: None, settings: Any
) -> None:
    settings.MRTRWEB_WEBHOOK_MAX_ATTEMPTS = 3
    call = start(conn, user, "echo", {"text": "hi"})
    with running_receiver(token.webhook_secret, plan=[500] * 10) as rx:
        subscribe(call, rx.url(), token)
    assert len(rx.received) == 3
    delivery = Delivery.objects.get()
    assert delivery.status == Delivery.Status.FAILED and delivery.attempts == 3
    assert [e.detail["gave_up"] for e in webhook_events(call)] == [False, False, True]


def test_a_receiver_that_stalls_times_out_and_is_retried(
    conn: Connection, user: Any, token: ApiToken, inline_tasks: None, settings: Any
) -> None:
    settings.MRTRWEB_WEBHOOK_TIMEOUT = 0.5
    call = start(conn, user, "echo", {"text": "hi"})
    with running_receiver(token.webhook_secret, plan=[STALL, 200]) as rx:
        subscribe(call, rx.url(), token)
    assert [r.answered for r in rx.received] == [STALL, 200]
    delivery = Delivery.objects.get()
    assert delivery.status == Delivery.Status.DELIVERED and delivery.attempts == 2
    assert delivery.history[0]["status_code"] is None
    assert "timed out" in delivery.history[0]["error"]
    failed, delivered = webhook_events(call)
    assert "timed out" in failed.detail["reason"] and failed.detail["http_status"] is None
    assert delivered.kind == "webhook_delivered"


def test_a_nothing_listening_destination_is_retried(
    conn: Connection, user: Any, token: ApiToken, inline_tasks: None, settings: Any
) -> None:
    settings.MRTRWEB_WEBHOOK_MAX_ATTEMPTS = 2
    call = start(conn, user, "echo", {"text": "hi"})
    with running_receiver(token.webhook_secret) as rx:
        url = rx.url()
    subscribe(call, url, token)  # the receiver has stopped: connection refused
    delivery = Delivery.objects.get()
    assert delivery.status == Delivery.Status.FAILED and delivery.attempts == 2
    assert "ConnectError" in delivery.last_error


def test_retries_are_due_times_with_backoff_and_the_scheduler_queues_them(
    conn: Connection, user: Any, token: ApiToken, settings: Any
) -> None:
    settings.MRTRWEB_WEBHOOK_BACKOFF = 60
    call = start(conn, user, "echo", {"text": "hi"})
    with running_receiver(token.webhook_secret, plan=[503, 200]) as rx:
        subscribe(call, rx.url(), token)
        assert rx.received == []  # queued, not sent inline
        assert len(run_queued()) == 1
        assert [r.answered for r in rx.received] == [503]
        # Nothing queued for later: the delivery is due again in 60 s, ±20 % jitter.
        assert not DBTaskResult.objects.filter(task_path=SEND_TASK, status="READY").exists()
        delivery = Delivery.objects.get()
        wait = delivery.next_attempt_at - timezone.now()
        assert timedelta(seconds=45) < wait < timedelta(seconds=73)
        assert webhook_events(call)[0].detail["retry_in_seconds"] >= 48
        assert send_due(delivery.next_attempt_at - timedelta(seconds=1)) == 0
        assert send_due(delivery.next_attempt_at) == 1
        assert len(run_queued()) == 1
    assert [r.answered for r in rx.received] == [503, 200]
    assert Delivery.objects.get().status == Delivery.Status.DELIVERED


@pytest.mark.parametrize("form", ["seconds", "http-date"])
def test_a_retry_after_in_seconds_or_as_an_http_date_is_honoured(
    conn: Connection, user: Any, token: ApiToken, settings: Any, form: str
) -> None:
    settings.MRTRWEB_WEBHOOK_BACKOFF = 1
    call = start(conn, user, "echo", {"text": "hi"})
    later = timezone.now() + timedelta(seconds=600)
    value = "600" if form == "seconds" else format_datetime(later, usegmt=True)
    with running_receiver(token.webhook_secret, plan=[(503, {"Retry-After": value})]) as rx:
        subscribe(call, rx.url(), token)
        assert len(run_queued()) == 1
    assert [r.answered for r in rx.received] == [(503, {"Retry-After": value})]
    # The receiver's wait, not the 1 s backoff (an HTTP date is to the second).
    assert Delivery.objects.get().next_attempt_at - timezone.now() > timedelta(seconds=590)
    assert webhook_events(call)[0].detail["retry_in_seconds"] >= 590


def test_the_backoff_doubles_up_to_the_ceiling(settings: Any) -> None:
    from mrtrweb.webhooks.sending import backoff_delay

    settings.MRTRWEB_WEBHOOK_BACKOFF = 60
    settings.MRTRWEB_WEBHOOK_BACKOFF_MAX = 900
    for attempt, base in [(1, 60), (2, 120), (3, 240), (4, 480), (5, 900), (9, 900)]:
        delays = [backoff_delay(attempt) for _ in range(50)]
        assert all(base * 0.8 <= d <= base * 1.2 for d in delays)
        assert len(set(delays)) > 1  # jittered
    assert backoff_delay(1, retry_after=300) >= 300
    assert backoff_delay(1, retry_after=10_000) <= 900 * 1.2


def test_a_revoked_token_cancels_pending_retries(
    conn: Connection, user: Any, token: ApiToken
) -> None:
    call = start(conn, user, "echo", {"text": "hi"})
    with running_receiver(token.webhook_secret, plan=[500]) as rx:
        subscribe(call, rx.url(), token)
        run_queued()
        token.revoke()
        assert send_due(Delivery.objects.get().next_attempt_at) == 1  # the retry comes due
        run_queued()
    assert len(rx.received) == 1
    delivery = Delivery.objects.get()
    assert delivery.status == Delivery.Status.CANCELLED
    assert [e.kind for e in webhook_events(call)] == ["webhook_failed", "webhook_cancelled"]


def test_a_revoked_token_hears_nothing_more(
    conn: Connection, user: Any, token: ApiToken, inline_tasks: None
) -> None:
    call = start(conn, user, "purchase", {"item": "tea"})
    with running_receiver(token.webhook_secret) as rx:
        subscribe(call, rx.url(), token)
        assert rx.events() == ["round.pending"]
        token.revoke()
        engine.answer(
            call.rounds.get(),
            {"shipping": {"action": "accept", "content": {"address": "1 Main St"}}},
            user,
        )
        engine.answer(call.rounds.get(index=2), {"payment": {"action": "decline"}}, user)
    call.refresh_from_db()
    assert call.is_finished
    assert rx.events() == ["round.pending"]
    assert Delivery.objects.count() == 1


def test_a_deleted_token_leaves_the_subscription_silent(
    conn: Connection, user: Any, token: ApiToken, inline_tasks: None
) -> None:
    call = start(conn, user, "purchase", {"item": "tea"})
    with running_receiver(token.webhook_secret) as rx:
        subscribe(call, rx.url(), token)
        token.delete()
        assert Subscription.objects.get().token is None
        engine.abandon(call.rounds.get(), user)
    assert rx.events() == ["round.pending"]


def test_an_abandoned_call_is_announced_as_finished(
    conn: Connection, user: Any, token: ApiToken, inline_tasks: None
) -> None:
    call = start(conn, user, "purchase", {"item": "tea"})
    with running_receiver(token.webhook_secret) as rx:
        subscribe(call, rx.url(), token)
        engine.abandon(call.rounds.get(), user)
    assert rx.events() == ["round.pending", "call.finished"]
    finished = rx.received[1].json["call"]
    assert finished["status"] == "cancelled" and finished["result"] is None
    assert finished["error"] == "Abandoned by a person."


def test_a_call_that_fails_to_start_is_announced_once(
    fault_peer: Any, user: Any, token: ApiToken, inline_tasks: None
) -> None:
    conn = Connection.objects.create(name="broken", url=fault_peer("garbage").url)
    call = start(conn, user, "echo", {"text": "hi"})
    assert call.status == Call.Status.FAILED
    with running_receiver(token.webhook_secret) as rx:
        subscribe(call, rx.url(), token)
        subscribe(call, rx.url(), token)  # the same subscription: nothing twice
        engine.note(call, "something_later")  # any later event: still once
    assert rx.events() == ["call.finished"]
    assert rx.received[0].json["call"]["error"]
    assert Subscription.objects.count() == 1


def test_a_refused_url_is_not_subscribed(
    conn: Connection, user: Any, token: ApiToken, settings: Any
) -> None:
    settings.MRTRWEB_WEBHOOK_ALLOW_PRIVATE = False
    call = start(conn, user, "echo", {"text": "hi"})
    with pytest.raises(InvalidWebhookURL):
        subscribe(call, "http://127.0.0.1:9/hook", token)
    with pytest.raises(InvalidWebhookURL):
        subscribe(call, "gopher://example.com/", token)
    assert not Subscription.objects.exists() and not Delivery.objects.exists()


def test_a_destination_refused_later_gives_up_without_sending(
    conn: Connection, user: Any, token: ApiToken, settings: Any
) -> None:
    call = start(conn, user, "echo", {"text": "hi"})
    with running_receiver(token.webhook_secret) as rx:
        subscribe(call, rx.url(), token)
        settings.MRTRWEB_WEBHOOK_ALLOW_PRIVATE = False  # the deployment tightened its rules
        run_queued()
    assert rx.received == []
    delivery = Delivery.objects.get()
    assert delivery.status == Delivery.Status.FAILED and "refused" in delivery.last_error


def test_deliveries_are_read_only_in_the_admin(
    conn: Connection, user: Any, token: ApiToken, inline_tasks: None, client: Any
) -> None:
    call = start(conn, user, "echo", {"text": "hi"})
    with running_receiver(token.webhook_secret) as rx:
        subscribe(call, rx.url(), token)
    delivery = Delivery.objects.get()
    admin = get_user_model().objects.create_superuser("root", password="pw-root-123")
    client.force_login(admin)
    listing = client.get(reverse("admin:webhooks_delivery_changelist"))
    assert listing.status_code == 200 and b"call.finished" in listing.content
    page = client.get(reverse("admin:webhooks_delivery_change", args=[delivery.pk]))
    assert page.status_code == 200
    assert str(delivery.uuid).encode() in page.content
    assert token.webhook_secret.encode() not in page.content
    assert b'name="_save"' not in page.content
    assert client.get(reverse("admin:webhooks_delivery_add")).status_code == 403
    assert (
        client.post(reverse("admin:webhooks_delivery_delete", args=[delivery.pk])).status_code
        == 403
    )


def test_importing_the_package_needs_no_app_registry() -> None:
    code = (
        "import sys, mrtrweb.webhooks, mrtrweb.webhooks.signing; "
        "assert 'mrtrweb.webhooks.models' not in sys.modules; "
        "assert callable(mrtrweb.webhooks.subscribe)"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "mrtrweb.settings"}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=60)


@pytest.mark.parametrize(
    "url",
    [
        "http://0177.0.0.1/hook",  # httpx.InvalidURL in the sender, before the fix
        "http://[::1/hook",  # even urlsplit raises on this one
        "http://0x7f.1/hook",
        "http://[fe80::1%25eth0]/hook",
        "http://" + "a" * 64 + ".example.test/hook",  # the resolver raises UnicodeError
    ],
)
def test_a_stored_url_the_sender_cannot_use_is_a_failed_attempt_not_a_crash(
    conn: Connection, user: Any, token: ApiToken, caplog: Any, url: str
) -> None:
    """A subscription stored before registration refused such URLs: its delivery gives up
    with a plain reason, one log line and no traceback."""
    from mrtrweb.webhooks import events

    call = start(conn, user, "echo", {"text": "hi"})
    subscription = Subscription.objects.create(call=call, token=token, url=url)
    (delivery,) = events.call_finished(call, [subscription])
    with caplog.at_level("INFO"):
        assert len(run_queued()) == 1  # the task itself, called as the worker calls it
    delivery.refresh_from_db()
    assert delivery.status == Delivery.Status.FAILED and delivery.attempts == 1
    assert delivery.last_error and "Traceback" not in delivery.last_error
    assert "/hook" not in delivery.last_error  # the host at most, never the path
    (event,) = webhook_events(call)
    assert event.kind == "webhook_failed" and event.detail["gave_up"] is True
    assert event.detail["reason"] == delivery.last_error
    assert not DBTaskResult.objects.filter(task_path=SEND_TASK, status="READY").exists()
    mine = [r for r in caplog.records if r.name.startswith("mrtrweb.webhooks")]
    assert len(mine) == 1 and mine[0].exc_info is None
    assert delivery.last_error in mine[0].getMessage()


def test_the_sender_turns_an_unusable_url_into_a_refusal(
    conn: Connection, user: Any, token: ApiToken
) -> None:
    """Below the URL check, the POST itself never raises for a URL httpx cannot use."""
    from mrtrweb.webhooks import events, sending

    call = start(conn, user, "echo", {"text": "hi"})
    subscription = Subscription.objects.create(
        call=call, token=token, url="http://0177.0.0.1/secret-path"
    )
    (delivery,) = events.call_finished(call, [subscription])
    delivery.refresh_from_db()
    status_code, error, retry_after, refused, _ = sending._post(delivery)
    assert (status_code, retry_after, refused) == (None, None, True)
    assert "cannot be used" in error and "secret-path" not in error


def test_a_call_nobody_subscribed_to_is_looked_up_without_joins(
    conn: Connection, user: Any, token: ApiToken, inline_tasks: None
) -> None:
    """Every event of every call asks for its subscriptions; most calls have none, and then
    one query of the subscriptions' own table answers (the join of tokens and people only
    when there is something to join)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from mrtrweb.webhooks.events import subscriptions_of

    call = start(conn, user, "purchase", {"item": "tea"})
    with CaptureQueriesContext(connection) as queries:
        assert subscriptions_of(call.pk) == []
    assert len(queries) == 1 and " JOIN " not in queries[0]["sql"], queries.captured_queries
    with running_receiver(token.webhook_secret) as rx:
        subscribe(call, rx.url(), token)
        assert subscriptions_of(call.pk) == [Subscription.objects.get(call=call)]
        token.revoke()
        assert subscriptions_of(call.pk) == []
