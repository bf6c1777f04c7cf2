"""Split rounds against real MCP peers: a round asking ``budget`` and ``schedule``
at once, each key routed to its own person or group; one retry with every answer under its
key, once every part is answered; a declined part as ``split_decline`` says; and nobody sees
or answers another's part (the round page, the call page, the inbox and the JSON API)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.test import Client

from mrtrweb.calls import engine
from mrtrweb.calls.models import Call, Event, Round, RoundPart
from mrtrweb.calls.presenting.policies import policy_states
from mrtrweb.elicitation import prefix_for_key
from mrtrweb.people.roles import ADMINS
from mrtrweb.policies.models import Policy
from mrtrweb.policies.snapshot import PolicySnapshot
from mrtrweb.policies.validation import problems
from tests.api.support import api_for
from tests.elicitation.support import post
from tests.support.factories import make_connection, make_user

pytestmark = pytest.mark.django_db(transaction=True)

BUDGET = {"action": "accept", "content": {"amount": 5000}}
SCHEDULE = {"action": "accept", "content": {"start": "2027-01-04"}}
BUDGET_Q = "Budget for Atlas?"
SCHEDULE_Q = "When does Atlas start?"


@pytest.fixture(autouse=True)
def _inline_tasks(inline_tasks: None) -> None:
    """Answers are delivered inline, so the peer has the retry when ``answer`` returns."""


@pytest.fixture
def people(db: Any) -> dict[str, Any]:
    ops = Group.objects.create(name="Ops")
    bob = make_user("bob", email="bob@example.org")
    bob.groups.add(ops)
    return {
        "ada": make_user("ada"),  # starts the calls
        "alice": make_user("alice", email="alice@example.org"),  # Finance: the budget
        "bob": bob,  # Ops: the schedule
        "carol": make_user("carol"),  # nobody asked her
    }


ROUTES = {"budget": {"user": "alice"}, "schedule": {"group": "Ops"}}


def retries(peer: Any, since: int) -> list[dict[str, Any]]:
    return [
        r["json"]["params"]
        for r in peer.recorded(since)
        if (r["json"] or {}).get("method") == "tools/call"
        and "inputResponses" in (r["json"].get("params") or {})
    ]


def start_split(peer: Any, people: dict[str, Any], decline: str = "decline-round") -> Call:
    conn = make_connection(peer)
    call = engine.start_call(
        connection=conn,
        method=Call.Method.TOOL,
        target="plan_budget_schedule",
        arguments={"project": "Atlas"},
        user=people["ada"],
        policy=PolicySnapshot(split_routes=ROUTES, split_decline=decline),
    )
    assert call.status == Call.Status.WAITING, call.error
    return call


def part(round: Round, key: str) -> RoundPart:
    return round.parts.get(key=key)


def test_each_key_becomes_a_part_and_one_retry_carries_both(
    fastmcp_peer: Any, people: dict[str, Any]
) -> None:
    peer = fastmcp_peer
    call = start_split(peer, people)
    round = call.rounds.get()
    assert round.split
    budget, schedule = part(round, "budget"), part(round, "schedule")
    assert (budget.keys, budget.assigned_user) == (["budget"], people["alice"])
    assert (schedule.keys, schedule.assigned_group.name) == (["schedule"], "Ops")
    assert policy_states([round])[round.pk] == ["parts answered 0 of 2"]

    since = peer.mark()
    engine.answer(round, {"budget": BUDGET}, people["alice"])
    round.refresh_from_db()
    assert round.status == Round.Status.PENDING  # waits for the schedule
    assert retries(peer, since) == []
    assert policy_states([round])[round.pk] == ["parts answered 1 of 2"]

    engine.answer(round, {"schedule": SCHEDULE}, people["bob"])
    (sent,) = retries(peer, since)  # exactly one retry, both keys under their own
    assert sent["inputResponses"] == {"budget": BUDGET, "schedule": SCHEDULE}
    call.refresh_from_db()
    assert call.status == Call.Status.COMPLETED, call.error
    assert call.result["structuredContent"]["status"] == "done"
    round.refresh_from_db()
    assert round.status == Round.Status.DELIVERED
    assert round.answers == {"budget": BUDGET, "schedule": SCHEDULE}
    # The audit trail: who answered which part.
    answered = Event.objects.filter(call=call, kind="part_answered").order_by("id")
    assert [(e.detail["part"], e.actor.username) for e in answered] == [
        ("budget", "alice"),
        ("schedule", "bob"),
    ]
    assert Event.objects.filter(call=call, kind="round_split").count() == 1
    # A part answered twice is refused; nothing more is sent.
    with pytest.raises(engine.AlreadyAnswered):
        engine.answer(round, {"budget": BUDGET}, people["alice"])
    assert len(retries(peer, since)) == 1


def test_decline_round_declines_every_key_at_once(
    fastmcp_peer: Any, people: dict[str, Any]
) -> None:
    peer = fastmcp_peer
    call = start_split(peer, people, "decline-round")
    round = call.rounds.get()
    since = peer.mark()
    engine.answer(round, {"budget": {"action": "decline"}}, people["alice"])
    (sent,) = retries(peer, since)
    assert sent["inputResponses"] == {
        "budget": {"action": "decline"},
        "schedule": {"action": "decline"},
    }
    call.refresh_from_db()
    assert call.result["structuredContent"] == {
        "status": "declined",
        "actions": {"budget": "decline", "schedule": "decline"},
    }
    assert part(round, "schedule").status == RoundPart.Status.CLOSED
    with pytest.raises(engine.AlreadyAnswered):
        engine.answer(round, {"schedule": SCHEDULE}, people["bob"])
    assert len(retries(peer, since)) == 1


def test_send_with_others_waits_and_sends_the_declined_part_as_declined(
    fastmcp_peer: Any, people: dict[str, Any]
) -> None:
    peer = fastmcp_peer
    call = start_split(peer, people, "send-with-others")
    round = call.rounds.get()
    since = peer.mark()
    engine.answer(round, {"budget": {"action": "decline"}}, people["alice"])
    round.refresh_from_db()
    assert round.status == Round.Status.PENDING and retries(peer, since) == []
    assert policy_states([round])[round.pk] == ["parts answered 1 of 2", "1 declined"]
    # Admins read it on the dashboard, and who answered which part in the audit trail.
    admin = _client(make_user("root", ADMINS))
    assert "parts answered 1 of 2" in admin.get("/dashboard/rounds/").content.decode()
    audit = admin.get(f"/dashboard/calls/{call.pk}/audit/").content.decode()
    assert "Round split between people" in audit and "Part answered" in audit
    engine.answer(round, {"schedule": SCHEDULE}, people["bob"])
    (sent,) = retries(peer, since)
    assert sent["inputResponses"] == {"budget": {"action": "decline"}, "schedule": SCHEDULE}
    call.refresh_from_db()
    assert call.result["structuredContent"]["actions"] == {
        "budget": "decline",
        "schedule": "accept",
    }


def test_keys_no_route_names_stay_with_the_rounds_own_routing(
    fastmcp_peer: Any, people: dict[str, Any]
) -> None:
    peer = fastmcp_peer
    conn = make_connection(peer)
    # Set as operators do: a Policy row for the tool; the snapshot is taken at the start.
    Policy.objects.create(
        connection=conn,
        tool_name="plan_budget_schedule",
        split_routes={"budget": {"user": "alice"}},
    )
    call = engine.start_call(
        connection=conn,
        method=Call.Method.TOOL,
        target="plan_budget_schedule",
        arguments={"project": "Atlas"},
        user=people["ada"],
    )
    round = call.rounds.get()
    rest = part(round, "")
    assert rest.keys == ["schedule"] and rest.assigned_user == people["ada"]  # the caller
    since = peer.mark()
    engine.answer(round, {"schedule": SCHEDULE}, people["ada"])
    engine.answer(round, {"budget": BUDGET}, people["alice"])
    (sent,) = retries(peer, since)
    assert sent["inputResponses"] == {"budget": BUDGET, "schedule": SCHEDULE}


def test_the_sdk_peer_gets_one_retry_with_both_keys(sdk_peer: Any, people: dict[str, Any]) -> None:
    conn = make_connection(sdk_peer, "sdk")
    routes = {
        "__main__:ask_budget": {"user": "alice"},
        "__main__:ask_schedule": {"group": "Ops"},
    }
    call = engine.start_call(
        connection=conn,
        method=Call.Method.TOOL,
        target="plan_quarter",
        arguments={"project": "Atlas"},
        user=people["ada"],
        policy=PolicySnapshot(split_routes=routes),
    )
    round = call.rounds.get()
    assert set(round.input_requests) == set(routes) and round.split
    since = sdk_peer.mark()
    engine.answer(round, {"__main__:ask_schedule": SCHEDULE}, people["bob"])
    assert retries(sdk_peer, since) == []
    engine.answer(
        round,
        {"__main__:ask_budget": {"action": "accept", "content": {"amount": 9}}},
        people["alice"],
    )
    (sent,) = retries(sdk_peer, since)
    assert set(sent["inputResponses"]) == set(routes)
    call.refresh_from_db()
    assert call.status == Call.Status.COMPLETED, call.error
    assert "Atlas: budget 9, starting 2027-01-04" in call.result["content"][0]["text"]


@pytest.mark.parametrize("mode", ["decline-round", "send-with-others"])
def test_the_sdk_peer_is_sent_a_declined_part_as_the_policy_says(
    sdk_peer: Any, people: dict[str, Any], mode: str
) -> None:
    conn = make_connection(sdk_peer, "sdk")
    budget, schedule = "__main__:ask_budget", "__main__:ask_schedule"
    call = engine.start_call(
        connection=conn,
        method=Call.Method.TOOL,
        target="plan_quarter",
        arguments={"project": "Atlas"},
        user=people["ada"],
        policy=PolicySnapshot(
            split_routes={budget: {"user": "alice"}, schedule: {"group": "Ops"}},
            split_decline=mode,
        ),
    )
    round = call.rounds.get()
    since = sdk_peer.mark()
    engine.answer(round, {budget: {"action": "decline"}}, people["alice"])
    if mode == "send-with-others":
        assert retries(sdk_peer, since) == []
        engine.answer(round, {schedule: SCHEDULE}, people["bob"])
    (sent,) = retries(sdk_peer, since)
    assert sent["inputResponses"] == {
        budget: {"action": "decline"},
        schedule: {"action": "decline"} if mode == "decline-round" else SCHEDULE,
    }
    call.refresh_from_db()
    # The SDK's resolvers answer a declined elicitation with a tool error.
    assert call.status == Call.Status.COMPLETED and call.result["isError"] is True


def form(key: str, answers: dict[str, Any]) -> dict[str, Any]:
    data = post(prefix_for_key(key), answers)
    return {k: data.getlist(k) for k in data}


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_a_person_sees_and_answers_only_their_part(
    fastmcp_peer: Any, people: dict[str, Any]
) -> None:
    peer = fastmcp_peer
    call = start_split(peer, people)
    round = call.rounds.get()
    alice, bob, carol = (_client(people[n]) for n in ("alice", "bob", "carol"))

    page = alice.get(round.get_absolute_url()).content.decode()
    assert BUDGET_Q in page and SCHEDULE_Q not in page
    assert prefix_for_key("budget") in page and prefix_for_key("schedule") not in page
    assert "you see and answer only the" in page
    page = bob.get(round.get_absolute_url()).content.decode()
    assert SCHEDULE_Q in page and BUDGET_Q not in page
    # Nor through the call page or the inbox.
    page = alice.get(call.get_absolute_url()).content.decode()
    assert SCHEDULE_Q not in page
    inbox = alice.get("/inbox/").content.decode()
    assert BUDGET_Q in inbox and SCHEDULE_Q not in inbox and "Your part: budget" in inbox
    inbox = bob.get("/inbox/").content.decode()
    assert SCHEDULE_Q in inbox and BUDGET_Q not in inbox
    # Someone with no part: 404, for the round and the call, and for a post.
    assert carol.get(round.get_absolute_url()).status_code == 404
    assert carol.get(call.get_absolute_url()).status_code == 404
    assert carol.post(round.get_absolute_url(), {"action": "decline"}).status_code == 404
    assert BUDGET_Q not in carol.get("/inbox/").content.decode()

    # Alice's decline declines only what she sees... under decline-round, the whole round;
    # here, her accept: her post cannot carry Bob's answer.
    since = peer.mark()
    data = {
        **form("budget", {"amount": 5000}),
        **form("schedule", {"start": "1999-01-01"}),
        "action": "accept",
    }
    response = alice.post(round.get_absolute_url(), data)
    assert response.status_code == 303
    assert part(round, "budget").answers == {"budget": BUDGET}
    assert part(round, "schedule").is_pending and retries(peer, since) == []
    # Answered: her inbox is empty, her round page says it waits for the others.
    assert BUDGET_Q not in alice.get("/inbox/").content.decode()
    assert alice.post(round.get_absolute_url(), data).status_code == 409
    response = bob.post(
        round.get_absolute_url(),
        {**form("schedule", {"start": "2027-01-04"}), "action": "accept"},
    )
    assert response.status_code == 303
    (sent,) = retries(peer, since)
    assert sent["inputResponses"] == {"budget": BUDGET, "schedule": SCHEDULE}
    # Bob sent the round, so his history lists it: with his own part's question only.
    history = bob.get("/inbox/history/").content.decode()
    assert SCHEDULE_Q in history and BUDGET_Q not in history


def test_the_api_shows_and_takes_only_the_tokens_part(
    fastmcp_peer: Any, people: dict[str, Any]
) -> None:
    peer = fastmcp_peer
    call = start_split(peer, people)
    round = call.rounds.get()
    alice, bob, carol = (api_for(people[n]) for n in ("alice", "bob", "carol"))

    (listed,) = alice.get("/rounds").json()["rounds"]
    assert list(listed["inputRequests"]) == ["budget"]
    detail = bob.get(f"/calls/{call.pk}").json()
    assert list(detail["rounds"][0]["inputRequests"]) == ["schedule"]
    assert carol.get(f"/calls/{call.pk}").status_code == 404
    assert carol.get("/rounds").json()["rounds"] == []
    assert carol.post(f"/rounds/{round.pk}/responses", {"responses": {}}).status_code == 404

    since = peer.mark()
    # Another part's key is not part of the round for this token.
    both = {"responses": {"budget": BUDGET, "schedule": SCHEDULE}}
    assert alice.post(f"/rounds/{round.pk}/responses", both).status_code == 422
    mine = alice.post(f"/rounds/{round.pk}/responses", {"responses": {"budget": BUDGET}})
    assert mine.status_code == 202, mine.content
    assert alice.get("/rounds").json()["rounds"] == []
    again = alice.post(f"/rounds/{round.pk}/responses", {"responses": {"budget": BUDGET}})
    assert again.status_code == 409
    answered = bob.post(f"/rounds/{round.pk}/responses", {"responses": {"schedule": SCHEDULE}})
    assert answered.status_code == 202
    (sent,) = retries(peer, since)
    assert sent["inputResponses"] == {"budget": BUDGET, "schedule": SCHEDULE}


def test_each_part_is_emailed_to_its_own_people_with_its_own_question(
    fastmcp_peer: Any, people: dict[str, Any], mailoutbox: list[Any]
) -> None:
    start_split(fastmcp_peer, people)
    sent = {tuple(mail.to): mail.subject + "\n" + mail.body for mail in mailoutbox}
    assert set(sent) == {("alice@example.org",), ("bob@example.org",)}
    assert BUDGET_Q in sent[("alice@example.org",)]
    assert SCHEDULE_Q not in sent[("alice@example.org",)]
    assert SCHEDULE_Q in sent[("bob@example.org",)]
    assert BUDGET_Q not in sent[("bob@example.org",)]


def test_a_policy_is_split_or_a_quorum_never_both(people: dict[str, Any]) -> None:
    both = PolicySnapshot(approvals_required=2, split_routes=ROUTES)
    assert problems(both)["split_routes"] == (
        "A round is split between people or needs a quorum, not both."
    )
    assert "split_routes" not in problems(PolicySnapshot(split_routes=ROUTES))


def test_each_part_can_carry_a_comment_for_the_requester_alone(
    fastmcp_peer: Any, people: dict[str, Any]
) -> None:
    """A comment left with a part is kept in the audit trail and shown to the requester (and
    its author), never to the other part's people and never sent to the server."""
    peer = fastmcp_peer
    call = start_split(peer, people)
    round = call.rounds.get()
    since = peer.mark()
    engine.answer(round, {"budget": BUDGET}, people["alice"], comment="Within Q1 budget.")
    engine.answer(round, {"schedule": SCHEDULE}, people["bob"], comment="Ops can start then.")
    (sent,) = retries(peer, since)
    assert "Within Q1" not in str(sent) and "Ops can start" not in str(sent)
    assert sent["inputResponses"] == {"budget": BUDGET, "schedule": SCHEDULE}
    notes = {
        e.actor.username: e.detail.get("comment")
        for e in Event.objects.filter(call=call, kind__in=["part_answered", "answered"])
        if e.detail.get("comment")
    }
    assert notes == {"alice": "Within Q1 budget.", "bob": "Ops can start then."}  # once each

    def call_page(user: Any) -> str:
        client = Client()
        client.force_login(user)
        response = client.get(f"/calls/{call.pk}/")
        assert response.status_code == 200
        return response.content.decode()

    requester = call_page(people["ada"])
    assert "Within Q1 budget." in requester and "Ops can start then." in requester
    alice = call_page(people["alice"])
    assert "Within Q1 budget." in alice and "Ops can start then." not in alice
    bob = call_page(people["bob"])
    assert "Ops can start then." in bob and "Within Q1 budget." not in bob
