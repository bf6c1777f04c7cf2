"""Delegation: a person away hands their rounds to someone until a date, on their
own page (/account/away/, plain forms); new rounds routed to them go to the delegate, rounds
already waiting for them are shown to the delegate too, the delegate answers through the
real round page against the real fastmcp peer, the audit trail says whom for, and the
delegation ends at its date (or early, on the page)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from mrtrweb.calls.access import can_answer, visible_rounds
from mrtrweb.calls.models import Call, Round
from mrtrweb.people.roles import ADMINS
from mrtrweb.policies.models import Delegation
from mrtrweb.servers.models import Routing
from tests.calls.engine.reminders_support import answer_on_the_page, signed_in, start
from tests.support.factories import make_connection, make_user

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("inline_tasks")]


@pytest.fixture
def people() -> dict[str, Any]:
    return {name: make_user(name, email=f"{name}@example.com") for name in ("carl", "ada", "bob")}


@pytest.fixture
def to_ada(fastmcp_peer: Any, people: dict[str, Any]) -> Any:
    """A connection whose rounds go to Ada (carl starts the calls)."""
    return make_connection(fastmcp_peer, routing=Routing.USER, route_user=people["ada"])


def go_away(person: Any, delegate: str, days: int = 3) -> Any:
    page = signed_in(person)
    until = timezone.localdate() + timedelta(days=days)
    response = page.post(reverse("away:away"), {"delegate": delegate, "until": until.isoformat()})
    assert response.status_code == 303, response.content.decode()[:2000]
    return page


def test_a_delegate_gets_new_rounds_and_waiting_ones_and_answers_for_the_person(
    to_ada: Any, people: dict[str, Any], mailoutbox: Any
) -> None:
    carl, ada, bob = people["carl"], people["ada"], people["bob"]
    waiting = start(to_ada, carl)  # before Ada goes away: hers
    assert (waiting.assigned_user, waiting.delegated_from) == (ada, None)
    assert not can_answer(bob, waiting)

    ada_page = go_away(ada, "bob")
    (delegation,) = Delegation.objects.filter(person=ada)
    assert delegation.delegate == bob
    assert delegation.until > timezone.now() + timedelta(days=3)
    away_page = ada_page.get(reverse("away:away")).content.decode()
    assert "Your rounds go to bob until" in away_page

    mailoutbox.clear()
    new = start(to_ada, carl)
    assert (new.assigned_user, new.delegated_from) == (bob, ada)
    assert new.events.get(kind="round_parked").detail["delegated_from"] == "ada"
    assert [m.to for m in mailoutbox] == [["bob@example.com"]]

    # Bob's inbox: both rounds, each "for ada". Ada still sees the one handed to Bob.
    inbox = signed_in(bob).get(reverse("inbox:index")).content.decode()
    assert f'id="round-{new.pk}"' in inbox and f'id="round-{waiting.pk}"' in inbox
    assert inbox.count("for ada") == 2
    ada_inbox = signed_in(ada).get(reverse("inbox:index")).content.decode()
    assert "handed to bob while you are away" in ada_inbox
    assert {r.pk for r in visible_rounds(bob)} >= {new.pk, waiting.pk}

    # Bob answers both on the round page; the server gets the answers.
    for round in (new, waiting):
        assert can_answer(bob, round)
        round = answer_on_the_page(bob, round)
        assert (round.status, round.answered_by) == (Round.Status.DELIVERED, bob)
        assert round.call.status == Call.Status.COMPLETED
        answered = round.events.get(kind="answered")
        assert (answered.actor, answered.detail["for_user"]) == (bob, "ada")

    # The audit trail says for whom.
    admin = make_user("root", ADMINS)
    audit = signed_in(admin).get(reverse("dashboard:call_audit", kwargs={"pk": new.call_id}))
    assert "by bob for ada" in " ".join(audit.content.decode().split())


def test_a_delegation_ends_at_its_date_and_early_on_the_page(
    to_ada: Any, people: dict[str, Any]
) -> None:
    carl, ada, bob = people["carl"], people["ada"], people["bob"]
    ada_page = go_away(ada, "bob")
    assert start(to_ada, carl).assigned_user == bob
    # Its date comes (time moved by moving the delegation's end, as the expiry tests do).
    Delegation.objects.filter(person=ada).update(until=timezone.now() - timedelta(seconds=1))
    back = start(to_ada, carl)
    assert (back.assigned_user, back.delegated_from) == (ada, None)
    assert not can_answer(bob, back)

    # Away again, and back early: "End it now" on the page.
    go_away(ada, "bob", days=10)
    assert start(to_ada, carl).assigned_user == bob
    running = Delegation.objects.get(person=ada, until__gt=timezone.now())
    response = ada_page.post(reverse("away:end", kwargs={"pk": running.pk}))
    assert response.status_code == 303
    running.refresh_from_db()
    assert running.until <= timezone.now()
    assert start(to_ada, carl).assigned_user == ada
    # Nobody ends someone else's delegation.
    assert signed_in(bob).post(reverse("away:end", kwargs={"pk": running.pk})).status_code == 404


def test_the_away_page_refuses_oneself_strangers_and_past_days(people: dict[str, Any]) -> None:
    page = signed_in(people["ada"])
    today = timezone.localdate()
    for data, says in (
        ({"delegate": "ada", "until": today.isoformat()}, "someone else than yourself"),
        ({"delegate": "nobody", "until": today.isoformat()}, "Nobody active has that username"),
        ({"delegate": "bob", "until": (today - timedelta(days=1)).isoformat()}, "Pick today"),
    ):
        response = page.post(reverse("away:away"), data)
        assert response.status_code == 200
        assert says in response.content.decode()
    assert not Delegation.objects.exists()
    # Only for a person signed in, and only their own.
    anonymous = Client()
    assert anonymous.get(reverse("away:away")).status_code == 302
    assert anonymous.post(reverse("away:away"), {"delegate": "bob"}).status_code == 302
    # The account page leads there.
    assert reverse("away:away") in page.get(reverse("account:settings")).content.decode()


def test_a_callers_own_round_stays_with_them_while_they_are_away(
    fastmcp_peer: Any, people: dict[str, Any]
) -> None:
    ada = people["ada"]
    go_away(ada, "bob")
    own = start(make_connection(fastmcp_peer), ada)
    assert (own.assigned_user, own.delegated_from) == (ada, None)


def test_admins_see_delegations_on_the_people_pages(people: dict[str, Any]) -> None:
    go_away(people["ada"], "bob")
    admin = signed_in(make_user("root", ADMINS))
    for person in ("ada", "bob"):
        page = admin.get(reverse("dashboard:person", kwargs={"pk": people[person].pk}))
        assert "ada's rounds go to bob from" in page.content.decode().replace("&#x27;", "'")
