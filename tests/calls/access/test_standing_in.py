"""How far standing in reaches (docs/approval-policies.md, "Delegation"): a stand-in answers,
for someone away, only the pending rounds routed to that person of calls they did not start;
nothing else of theirs shows (pages, inbox, history, API, emails, sockets). A stand-in's own
Away passes nothing on; a reassignment or an escalation ends the standing in; under a quorum
only the approvers vote, one vote each whoever casts it, and admins outside them not at all.

Rounds are parked by the real fastmcp peer through the engine; people act through the pages,
the JSON API and the engine as they would."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.urls import reverse
from django.utils import timezone

from mrtrweb.calls import engine
from mrtrweb.calls.access import can_answer, visible_calls, visible_rounds
from mrtrweb.calls.emails.reminder_notices import notify_reminder
from mrtrweb.calls.engine.escalation import escalate
from mrtrweb.calls.models import Call, Round, Vote
from mrtrweb.core.context_processors import _waiting
from mrtrweb.live.checks import sees_calls_now
from mrtrweb.people.roles import ADMINS
from mrtrweb.policies.models import Delegation, Policy
from mrtrweb.policies.snapshot import PolicySnapshot
from mrtrweb.servers.models import Routing
from tests.api.support import api_for
from tests.calls.engine.reminders_support import answer_on_the_page, signed_in, start
from tests.support.factories import make_connection, make_user

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("inline_tasks")]

APPROVAL = {"approve": True, "replicas": 3, "window": "tonight", "notify": ["ops"]}


@pytest.fixture
def people() -> dict[str, Any]:
    names = ("carl", "ada", "bob", "dan")
    return {name: make_user(name, email=f"{name}@example.com") for name in names}


def away(person: Any, delegate: Any) -> Delegation:
    now = timezone.now()
    return Delegation.objects.create(
        person=person,
        delegate=delegate,
        starts_at=now - timedelta(minutes=1),
        until=now + timedelta(days=3),
    )


def sees_nothing_of(user: Any, round: Round) -> None:
    """``user`` is shown nothing of ``round`` or its call, on any surface."""
    page = signed_in(user)
    assert page.get(round.get_absolute_url()).status_code == 404
    assert page.get(round.call.get_absolute_url()).status_code == 404
    assert not visible_rounds(user).filter(pk=round.pk).exists()
    assert not visible_calls(user).filter(pk=round.call_id).exists()
    assert sees_calls_now([(user, round.call_id)]) == [False]  # a call's live socket
    inbox = page.get(reverse("inbox:index")).content.decode()
    history = page.get(reverse("inbox:history")).content.decode()
    assert f"round-{round.pk}" not in inbox + history
    api = api_for(user)
    assert api.get(f"/calls/{round.call_id}").status_code == 404
    for status in ("pending", "delivered"):
        listed = api.get("/rounds", status=status).json()["rounds"]
        assert round.pk not in [r["id"] for r in listed]


def test_a_stand_in_sees_nothing_of_the_calls_the_absent_person_started(
    fastmcp_peer: Any, people: dict[str, Any], mailoutbox: Any
) -> None:
    ada, bob = people["ada"], people["bob"]
    conn = make_connection(fastmcp_peer)  # rounds go to their caller
    done = answer_on_the_page(ada, start(conn, ada))
    assert done.call.status == Call.Status.COMPLETED
    waiting = start(conn, ada)
    away(ada, bob)

    # Her answered call (its answers and result) and her own waiting round: not bob's.
    for round in (done, waiting):
        sees_nothing_of(bob, round)
        assert not can_answer(bob, Round.objects.get(pk=round.pk))
    assert _waiting(bob) == 0
    refused = signed_in(bob).post(waiting.get_absolute_url(), {"action": "decline"})
    assert refused.status_code == 404
    answered = api_for(bob).post(
        f"/rounds/{waiting.pk}/responses", {"responses": {"confirm": {"action": "decline"}}}
    )
    assert answered.status_code == 404
    assert Round.objects.get(pk=waiting.pk).status == Round.Status.PENDING

    # Reminders of her own round go to her alone.
    mailoutbox.clear()
    notify_reminder(Round.objects.get(pk=waiting.pk), 0.5)
    assert [m.to for m in mailoutbox] == [["ada@example.com"]]


def test_a_stand_in_loses_a_round_of_the_absent_person_once_it_is_answered(
    fastmcp_peer: Any, people: dict[str, Any]
) -> None:
    carl, ada, bob = people["carl"], people["ada"], people["bob"]
    to_ada = make_connection(fastmcp_peer, routing=Routing.USER, route_user=ada)
    waiting = start(to_ada, carl)
    away(ada, bob)
    assert can_answer(bob, waiting) and _waiting(bob) == 1  # pending and routed to her: his
    answer_on_the_page(ada, waiting)  # she answers it herself
    sees_nothing_of(bob, waiting)


def test_a_stand_ins_own_away_passes_nothing_on(
    fastmcp_peer: Any, people: dict[str, Any], mailoutbox: Any
) -> None:
    carl, ada, bob, dan = people["carl"], people["ada"], people["bob"], people["dan"]
    to_ada = make_connection(fastmcp_peer, routing=Routing.USER, route_user=ada)
    away(ada, bob)
    held = start(to_ada, carl)
    assert (held.assigned_user, held.delegated_from) == (bob, ada)
    away(bob, dan)
    sees_nothing_of(dan, held)
    assert not can_answer(dan, held) and _waiting(dan) == 0
    mailoutbox.clear()
    notify_reminder(Round.objects.get(pk=held.pk), 0.5)
    assert [m.to for m in mailoutbox] == [["bob@example.com"]]
    # Bob and Ada still may.
    assert can_answer(bob, held) and can_answer(ada, held)


def test_an_admins_reassignment_ends_the_standing_in(
    fastmcp_peer: Any, people: dict[str, Any]
) -> None:
    carl, ada, bob = people["carl"], people["ada"], people["bob"]
    to_ada = make_connection(fastmcp_peer, routing=Routing.USER, route_user=ada)
    away(ada, bob)
    held = start(to_ada, carl)
    assert can_answer(ada, held)
    root = signed_in(make_user("root", ADMINS))
    response = root.post(
        reverse("dashboard:bulk"),
        {"one": f"reassign:{held.pk}", "assign_user": "carl", "confirmed": "1"},
    )
    assert response.status_code == 303
    held.refresh_from_db()
    assert (held.assigned_user, held.delegated_from) == (carl, None)
    for person in (ada, bob):
        assert not can_answer(person, held)
        assert signed_in(person).get(held.get_absolute_url()).status_code == 404
        assert _waiting(person) == 0


def test_an_escalation_ends_the_standing_in(fastmcp_peer: Any, people: dict[str, Any]) -> None:
    carl, ada, bob, dan = people["carl"], people["ada"], people["bob"], people["dan"]
    to_ada = make_connection(fastmcp_peer, routing=Routing.USER, route_user=ada)
    away(ada, bob)
    held = start(to_ada, carl)
    policy = PolicySnapshot(escalate_after_seconds=60, escalate_user="dan")
    assert escalate(held, policy, timezone.now() + timedelta(hours=1))
    held.refresh_from_db()
    assert (held.assigned_user, held.delegated_from) == (dan, None)
    assert not can_answer(ada, held) and _waiting(ada) == 0
    assert signed_in(ada).get(held.get_absolute_url()).status_code == 404


# -- quorum ------------------------------------------------------------------------------------


def quorum_call(conn: Any, starter: Any, group: Group | None) -> Round:
    Policy.objects.create(connection=conn, approvers_group=group, approvals_required=2)
    call = engine.start_call(
        connection=conn,
        method=Call.Method.TOOL,
        target="approve_deploy",
        arguments={"service": "api"},
        user=starter,
    )
    return call.rounds.get()


PROPOSAL = {"approval": {"action": "accept", "content": APPROVAL}}


def test_admins_outside_the_approvers_do_not_vote(
    fastmcp_peer: Any, people: dict[str, Any]
) -> None:
    finance = Group.objects.create(name="Finance")
    people["ada"].groups.add(finance)
    people["bob"].groups.add(finance)
    round = quorum_call(make_connection(fastmcp_peer), people["carl"], finance)
    root = make_user("root", ADMINS)
    # Not the first answers (the proposal counts as an approval) ...
    with pytest.raises(engine.NotEligible):
        engine.answer(round, PROPOSAL, root)
    refused = api_for(root).post(f"/rounds/{round.pk}/responses", {"responses": PROPOSAL})
    assert refused.status_code == 403 and refused.json()["type"].endswith("not-eligible")
    engine.answer(round, PROPOSAL, people["ada"])
    round.refresh_from_db()
    # ... nor a vote, on the page or in the engine.
    assert engine.why_cannot_vote(round, root) == "not_eligible"
    page = signed_in(root)
    assert "Approve</button>" not in page.get(round.get_absolute_url()).content.decode()
    response = page.post(round.get_absolute_url(), {"action": "approve"})
    assert response.status_code == 403
    assert "approvers are others" in response.content.decode()
    assert Round.objects.get(pk=round.pk).status == Round.Status.PENDING
    assert list(Vote.objects.filter(round=round).values_list("voter", flat=True)) == [
        people["ada"].pk
    ]
    # An admin still cancels it.
    engine.cancel_round(round, root)
    assert Round.objects.get(pk=round.pk).status != Round.Status.PENDING


def test_a_stand_in_casts_the_absent_approvers_one_vote(
    fastmcp_peer: Any, people: dict[str, Any]
) -> None:
    carl, ada, bob, dan = people["carl"], people["ada"], people["bob"], people["dan"]
    finance = Group.objects.create(name="Finance")
    ada.groups.add(finance)
    bob.groups.add(finance)
    round = quorum_call(make_connection(fastmcp_peer), carl, finance)
    engine.reassign(round, None, user=ada)  # an admin hands it to one approver
    away(ada, dan)
    round.refresh_from_db()
    # Dan, no approver, proposes for Ada: her vote.
    engine.answer(round, PROPOSAL, dan)
    (cast,) = Vote.objects.filter(round=round)
    assert (cast.voter, cast.for_user) == (dan, ada)
    round.refresh_from_db()
    # Ada cannot add a second vote of hers: the quorum is not met by one approver.
    assert engine.why_cannot_vote(round, ada) == "voted"
    with pytest.raises(engine.AlreadyVoted):
        engine.vote(round, ada, "approve")
    assert Round.objects.get(pk=round.pk).status == Round.Status.PENDING
    assert Vote.objects.filter(round=round).count() == 1


def test_a_requesters_own_away_gives_nobody_a_vote_on_their_call(
    fastmcp_peer: Any, people: dict[str, Any]
) -> None:
    ada, bob = people["ada"], people["bob"]
    # No approvers group: the round goes to its caller, and her Away does not hand it on.
    round = quorum_call(make_connection(fastmcp_peer), ada, None)
    assert round.assigned_user == ada
    away(ada, bob)
    assert not can_answer(bob, round)
    with pytest.raises(engine.NotEligible):
        engine.answer(round, PROPOSAL, bob)
    assert signed_in(bob).post(round.get_absolute_url(), {"action": "approve"}).status_code == 404


def test_nobody_answers_their_own_request_as_someone_elses_stand_in(
    fastmcp_peer: Any, people: dict[str, Any]
) -> None:
    """Bob stands in for ada, and starts a call whose rounds go to ada: the round is not handed
    to him, and one already waiting for her is not his to see or answer either."""
    ada, bob = people["ada"], people["bob"]
    to_ada = make_connection(fastmcp_peer, routing=Routing.USER, route_user=ada)
    before = start(to_ada, bob)  # waiting for ada before she went away
    away(ada, bob)
    after = start(to_ada, bob)  # parked while she is away
    assert (after.assigned_user, after.delegated_from) == (ada, None)
    for round in (before, after):
        round = Round.objects.get(pk=round.pk)
        assert not can_answer(bob, round)
        assert (
            not visible_rounds(bob)
            .filter(pk=round.pk, assigned_user=ada)
            .exclude(call__started_by=bob)
            .exists()
        )
        refused = signed_in(bob).post(round.get_absolute_url(), {"action": "decline"})
        assert refused.status_code in (403, 404)
        assert Round.objects.get(pk=round.pk).status == Round.Status.PENDING
    assert _waiting(bob) == 0  # his own call's rounds wait for ada, not for him
    # Ada still answers them herself.
    assert can_answer(ada, Round.objects.get(pk=after.pk))
