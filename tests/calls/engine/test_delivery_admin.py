"""Flagged rounds (delivery outcome unknown) as admins and the people who answered see them.

Real rounds from the flaky peer (``tests.peers.faults --mode flaky``): the resubmission is
handled and then the connection drops, so the round is flagged; the dashboard lists it with a
count and its known facts, and offers Resend and Abandon (POST, CSRF, admins only).
"""

from __future__ import annotations

from io import StringIO
from typing import Any

import httpx
import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from mrtrweb.calls import engine
from mrtrweb.calls.models import Call, Round
from mrtrweb.servers.models import Connection
from tests.calls.engine.delivery_support import DATABASE_QUEUE, flaky_peer
from tests.dashboard.support import client_for, make_admin, make_user, visible_text

pytestmark = pytest.mark.django_db(transaction=True)

ROUNDS = reverse("dashboard:rounds")
BULK = reverse("dashboard:bulk")


@pytest.fixture(autouse=True)
def _database_queue(settings: Any) -> None:
    settings.TASKS = DATABASE_QUEUE


@pytest.fixture
def flaky(fault_peer: Any) -> Any:
    return flaky_peer(fault_peer, "delivery-admin-tests")


def set_fault(peer: Any, fault: str | None, times: int = 1) -> None:
    httpx.post(f"{peer.base_url}/_peer/fault", json={"fault": fault, "times": times})


def run_tasks() -> None:
    call_command("db_worker", "--batch", "--no-startup-delay", "--no-reload", stdout=StringIO())


def handled(peer: Any) -> int:
    return sum("inputResponses" in ((r["json"] or {}).get("params") or {}) for r in peer.recorded())


@pytest.fixture
def flagged(flaky: Any) -> Round:
    """A round answered by ann whose delivery broke off after the server handled it."""
    ann = make_user("ann", "End users")
    conn = Connection.objects.create(name="flaky", url=flaky.url, read_timeout=2.0)
    call = engine.start_call(
        connection=conn,
        method=Call.Method.TOOL,
        target="confirm_delete",
        arguments={"path": "/srv/x"},
        user=ann,
    )
    round = call.rounds.get()
    (key,) = round.input_requests
    set_fault(flaky, "drop")
    engine.answer(round, {key: {"action": "accept", "content": {"sure": True}}}, ann)
    run_tasks()
    round.refresh_from_db()
    assert round.status == Round.Status.UNKNOWN
    return round


def test_the_dashboard_counts_and_lists_flagged_rounds_with_their_facts(
    flagged: Round, flaky: Any
) -> None:
    web = client_for(make_admin())
    page = visible_text(web.get(ROUNDS))
    assert "Needs attention 1" in page
    listed = web.get(ROUNDS, {"status": "unknown"})
    text = visible_text(listed)
    assert f"#{flagged.pk}" in text
    assert "sent, outcome unknown: waiting for an admin" in text
    assert "Attempts 1" in text and "Last HTTP status 200" in text
    assert "OutcomeUnknown" in text and "stored, from ann" in text
    assert f'value="resend:{flagged.pk}"' in listed.content.decode()
    assert f'value="abandon:{flagged.pk}"' in listed.content.decode()
    # The requestState never reaches a page.
    assert flagged.request_state not in listed.content.decode()


def test_an_admin_resends_a_flagged_round_once(flagged: Round, flaky: Any) -> None:
    web = client_for(make_admin())
    response = web.post(
        BULK, {"confirmed": "1", "one": f"resend:{flagged.pk}", "next": f"{ROUNDS}?status=unknown"}
    )
    assert response.status_code == 303
    again = web.post(BULK, {"confirmed": "1", "one": f"resend:{flagged.pk}"}, follow=True)
    assert "not waiting for an admin" in visible_text(again)
    run_tasks()
    flagged.refresh_from_db()
    assert flagged.status == Round.Status.DELIVERED
    assert flagged.call.status == Call.Status.COMPLETED
    assert handled(flaky) == 2  # the lost one, and the admin's one resend
    assert "Needs attention 0" in visible_text(web.get(ROUNDS))


def test_an_admin_abandons_a_flagged_round(flagged: Round, flaky: Any) -> None:
    web = client_for(make_admin())
    done = web.post(BULK, {"confirmed": "1", "one": f"abandon:{flagged.pk}"}, follow=True)
    assert "Abandon (outcome unknown): 1 abandoned." in visible_text(done)
    flagged.refresh_from_db()
    assert flagged.status == Round.Status.CANCELLED
    assert flagged.answers is not None
    run_tasks()
    assert handled(flaky) == 1


def test_only_admins_may_resend_or_abandon_and_only_with_csrf(flagged: Round) -> None:
    ann = flagged.answered_by
    forbidden = client_for(ann).post(BULK, {"confirmed": "1", "one": f"resend:{flagged.pk}"})
    assert forbidden.status_code == 403
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(make_admin())
    assert strict.post(BULK, {"confirmed": "1", "one": f"resend:{flagged.pk}"}).status_code == 403
    flagged.refresh_from_db()
    assert flagged.status == Round.Status.UNKNOWN


def test_the_people_who_answered_see_their_answers_are_safe(flagged: Round) -> None:
    web = client_for(flagged.answered_by)
    for url in (flagged.get_absolute_url(), flagged.call.get_absolute_url()):
        text = visible_text(web.get(url))
        assert "Your answers are safe." in text
        assert "an admin has been asked" in text
