"""Split rounds stay split wherever a call's rounds are listed for someone, against the real
fastmcp peer: its ``plan_and_confirm`` asks ``budget`` and ``schedule`` in one round (split:
ann has the budget, bob the schedule) and ``confirm`` alone in another (carl's, not split), in
either order. Each of them reads whole only what is theirs; of any other round they see that
it exists and its status, on the call page (its rounds and its comments), in the API's call
resource (with and without ``?wait=``), in the emails (new round, reminders, expiry) and in
the forms of a call started again; a part's person cancels their part, never the whole round.
The call's starter and admins read everything. The live frames are in
tests/live/test_split_rounds.py."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from mrtrweb.calls import engine
from mrtrweb.calls.models import Call, Round
from mrtrweb.people.roles import ADMINS
from mrtrweb.policies.models import Policy
from mrtrweb.policies.snapshot import PolicySnapshot
from tests.api.support import api_for
from tests.calls.engine.reminders_support import moment
from tests.support.factories import make_connection, make_user

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("inline_tasks")]

BUDGET_Q = "Budget for Atlas?"
SCHEDULE_Q = "When does Atlas start?"
CONFIRM_Q = "Go ahead with Atlas?"
# What each person typed: their answers and their notes for the requester.
AMOUNT = 7319
NOTE = "vendor-late-by-a-week"
SAID = {"ann": "ann-says-tight", "bob": "bob-says-january", "carl": "carl-says-go"}
BUDGET = {"budget": {"action": "accept", "content": {"amount": AMOUNT}}}
SCHEDULE = {"schedule": {"action": "accept", "content": {"start": "2027-03-15"}}}
CONFIRM = {"confirm": {"action": "accept", "content": {"ok": True, "note": NOTE}}}
# What belongs to each person's round, and must not reach the others.
OWN = {
    "ann": (BUDGET_Q, str(AMOUNT), SAID["ann"]),
    "bob": (SCHEDULE_Q, SAID["bob"]),
    "carl": (CONFIRM_Q, NOTE, SAID["carl"]),
}


@pytest.fixture
def people(db: Any) -> dict[str, Any]:
    return {
        "sam": make_user("sam", email="sam@example.org"),  # starts the calls
        "ann": make_user("ann", email="ann@example.org"),  # the budget part
        "bob": make_user("bob", email="bob@example.org"),  # the schedule part
        "carl": make_user("carl", email="carl@example.org"),  # the call's rounds go to him
        "root": make_user("root", ADMINS),
    }


def start(peer: Any, people: dict[str, Any], *, confirm_first: bool, **policy: Any) -> Call:
    """A ``plan_and_confirm`` call by sam whose rounds go to carl, the budget to ann and the
    schedule to bob."""
    call = engine.start_call(
        connection=make_connection(peer, state_lifetime=timedelta(hours=1)),
        method=Call.Method.TOOL,
        target="plan_and_confirm",
        arguments={"project": "Atlas", "confirm_first": confirm_first},
        user=people["sam"],
        route_user=people["carl"],
        policy=PolicySnapshot(
            split_routes={"budget": {"user": "ann"}, "schedule": {"user": "bob"}}, **policy
        ),
    )
    assert call.status == Call.Status.WAITING, call.error
    return call


def answer_plan(call: Call, people: dict[str, Any]) -> None:
    round = call.rounds.get(split=True)
    engine.answer(round, BUDGET, people["ann"], comment=SAID["ann"])
    engine.answer(round, SCHEDULE, people["bob"], comment=SAID["bob"])


def answer_confirm(call: Call, people: dict[str, Any]) -> None:
    round = call.rounds.get(split=False, status=Round.Status.PENDING)
    engine.answer(round, CONFIRM, people["carl"], comment=SAID["carl"])


def call_page(user: Any, call: Call) -> str:
    client = Client()
    client.force_login(user)
    response = client.get(call.get_absolute_url())
    assert response.status_code == 200
    return response.content.decode()


def assert_reads_only_their_own(page: str, name: str) -> None:
    for owner, marks in OWN.items():
        for mark in marks:
            if owner == name:
                assert mark in page, (name, mark)
            else:
                assert mark not in page, (name, "reads", owner, mark)


@pytest.mark.parametrize("confirm_first", [False, True], ids=["split-first", "split-second"])
def test_the_call_page_shows_each_person_only_their_rounds_and_comments(
    fastmcp_peer: Any, people: dict[str, Any], confirm_first: bool
) -> None:
    call = start(fastmcp_peer, people, confirm_first=confirm_first)
    steps = [answer_confirm, answer_plan] if confirm_first else [answer_plan, answer_confirm]
    for step in steps:
        step(call, people)
    call.refresh_from_db()
    assert call.status == Call.Status.COMPLETED, call.error

    for name in ("ann", "bob", "carl"):
        page = call_page(people[name], call)
        assert_reads_only_their_own(page, name)
        # The other rounds are there, with their status, and nothing else of them.
        assert "Round 1" in page and "Round 2" in page
        assert page.count("status-delivered") >= 2
    for name in ("sam", "root"):
        page = call_page(people[name], call)
        for marks in OWN.values():
            assert all(mark in page for mark in marks), name


def test_a_waiting_round_of_someone_else_is_only_said_to_wait(
    fastmcp_peer: Any, people: dict[str, Any]
) -> None:
    call = start(fastmcp_peer, people, confirm_first=False)
    answer_plan(call, people)
    waiting = call.rounds.get(index=2)
    assert waiting.status == Round.Status.PENDING
    page = call_page(people["ann"], call)
    assert CONFIRM_Q not in page and SCHEDULE_Q not in page
    # Not whom it waits for, nor a link to a page that is not hers.
    assert waiting.get_absolute_url() not in page and "waits for carl" not in page
    assert "Round 2 waits for an answer." in page
    assert "Round 2 waits for carl." in call_page(people["sam"], call)


@pytest.mark.parametrize("wait", ["", "?wait=0.2"], ids=["now", "wait"])
def test_the_apis_call_resource_shows_each_token_only_its_rounds(
    fastmcp_peer: Any, people: dict[str, Any], wait: str
) -> None:
    call = start(fastmcp_peer, people, confirm_first=True)
    answer_confirm(call, people)  # round 1: carl's, round 2: split, still waiting

    def rounds(name: str) -> list[dict[str, Any]]:
        response = api_for(people[name]).get(f"/calls/{call.pk}{wait}")
        assert response.status_code == 200, response.content
        return response.json()["rounds"]

    confirm, plan = rounds("ann")
    assert list(plan["inputRequests"]) == ["budget"]
    # Carl's round: that it is there and its status, no more.
    assert confirm["status"] == "delivered" and confirm["index"] == 1
    assert confirm["inputRequests"] == {}
    assert confirm["answeredBy"] is None and confirm["assignedUser"] is None
    assert confirm["answeredAt"] is None and confirm["expiresAt"] is None
    assert NOTE not in str(rounds("ann")) and CONFIRM_Q not in str(rounds("bob"))
    confirm, plan = rounds("carl")
    assert list(confirm["inputRequests"]) == ["confirm"] and confirm["answeredBy"] == "carl"
    assert plan["inputRequests"] == {} and plan["status"] == "pending"
    assert BUDGET_Q not in str(rounds("carl"))
    for name in ("sam", "root"):
        confirm, plan = rounds(name)
        assert list(confirm["inputRequests"]) == ["confirm"]
        assert list(plan["inputRequests"]) == ["budget", "schedule"]


def test_a_split_rounds_reminders_go_to_each_part_with_its_own_question(
    fastmcp_peer: Any, people: dict[str, Any], mailoutbox: list[Any]
) -> None:
    """Carl is the split round's own assignee (the call routes its rounds to him) yet has no
    part in it: he is not reminded of it, and ann and bob each of their own question."""
    call = start(fastmcp_peer, people, confirm_first=False, reminders=[0.5, 0.9])
    round = call.rounds.get()
    # Told of the round as of its reminders: each part's people, with their part only.
    told = {mail.to[0]: mail.body for mail in mailoutbox}
    assert set(told) == {"ann@example.org", "bob@example.org"}
    assert SCHEDULE_Q not in told["ann@example.org"] and BUDGET_Q not in told["bob@example.org"]
    del mailoutbox[:]
    assert engine.remind_due(moment(round, 0.5)) == 1
    sent = {mail.to[0]: mail.subject + "\n" + mail.body for mail in mailoutbox}
    assert set(sent) == {"ann@example.org", "bob@example.org"}
    assert BUDGET_Q in sent["ann@example.org"] and SCHEDULE_Q not in sent["ann@example.org"]
    assert SCHEDULE_Q in sent["bob@example.org"] and BUDGET_Q not in sent["bob@example.org"]
    # A part answered is not reminded again.
    engine.answer(round, BUDGET, people["ann"])
    del mailoutbox[:]
    assert engine.remind_due(moment(round, 0.9)) == 1
    assert [mail.to for mail in mailoutbox] == [["bob@example.org"]]


def test_a_restart_fills_in_only_answers_the_person_could_read(
    fastmcp_peer: Any, people: dict[str, Any]
) -> None:
    """A round of a call started again is filled in with the answers given to the same
    questions before, but only those its reader could read: ann, who had the budget part,
    starts sam's call again; its rounds now ask her (the new call is hers) and her forms hold
    her own budget, never the schedule bob gave nor what sam answered to the confirmation."""
    connection = make_connection(fastmcp_peer)
    # Configured, not given to the call alone: a restart takes the policy configured now.
    Policy.objects.create(
        connection=connection,
        split_routes={"budget": {"user": "ann"}, "schedule": {"user": "bob"}},
    )
    call = engine.start_call(
        connection=connection,
        method=Call.Method.TOOL,
        target="plan_and_confirm",
        arguments={"project": "Atlas"},
        user=people["sam"],  # no routing: the rounds' own assignee is the starter
    )
    answer_plan(call, people)
    engine.answer(call.rounds.get(index=2), CONFIRM, people["sam"])
    again = engine.restart(call, people["ann"])
    plan = again.rounds.get()
    ann = Client()
    ann.force_login(people["ann"])
    page = ann.get(plan.get_absolute_url()).content.decode()
    assert f'value="{AMOUNT}"' in page and "2027-03-15" not in page
    engine.answer(plan, BUDGET, people["ann"])
    engine.answer(plan, SCHEDULE, people["bob"])
    confirm = again.rounds.get(index=2)
    assert confirm.assigned_user == people["ann"]
    page = ann.get(confirm.get_absolute_url()).content.decode()
    assert CONFIRM_Q in page and NOTE not in page
    # Sam answered the confirmation himself: started again by him, it is his to fill in.
    sams = engine.restart(call, people["sam"])
    answer_plan(sams, people)
    sam = Client()
    sam.force_login(people["sam"])
    assert NOTE in sam.get(sams.rounds.get(index=2).get_absolute_url()).content.decode()


def test_a_parts_person_cancels_their_part_not_the_whole_split_round(
    fastmcp_peer: Any, people: dict[str, Any]
) -> None:
    """Cancelling the call refuses every part at once: that is its caller's (or an admin's)
    to do, not one part's person's, who answers their own part with a cancel instead."""
    call = start(fastmcp_peer, people, confirm_first=False, split_decline="send-with-others")
    round = call.rounds.get()
    refused = api_for(people["ann"]).post(f"/calls/{call.pk}/cancel", {})
    assert refused.status_code == 409, refused.content
    assert "your part" in refused.json()["detail"]
    assert round.parts.get(key="schedule").is_pending
    assert round.parts.get(key="budget").is_pending
    # Her own part she may cancel; bob's still waits, as the policy says.
    mine = {"responses": {"budget": {"action": "cancel"}}}
    assert api_for(people["ann"]).post(f"/rounds/{round.pk}/responses", mine).status_code == 202
    assert round.parts.get(key="schedule").is_pending
    # The caller cancels the whole call.
    assert api_for(people["sam"]).post(f"/calls/{call.pk}/cancel", {}).status_code == 200
    assert not round.parts.get(key="schedule").is_pending


def test_a_split_rounds_expiry_is_told_to_its_parts_people(
    fastmcp_peer: Any, people: dict[str, Any], mailoutbox: list[Any]
) -> None:
    """Carl, the round's own assignee with no part in it, does not see the call (its first
    round expired, so no round of his was ever asked): he is not told of it."""
    call = start(fastmcp_peer, people, confirm_first=False)
    round = call.rounds.get()
    del mailoutbox[:]
    Round.objects.filter(pk=round.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert engine.expire_if_due(round.pk) is True
    call.refresh_from_db()
    assert call.status == Call.Status.EXPIRED
    assert sorted(mail.to[0] for mail in mailoutbox) == ["ann@example.org", "bob@example.org"]
    assert all("Expired" in mail.subject for mail in mailoutbox)


def test_a_split_rounds_escalation_tells_nobody_of_parts_not_theirs(
    fastmcp_peer: Any, people: dict[str, Any], mailoutbox: list[Any]
) -> None:
    """Escalating a split round moves its own assignee (carl, who has no part in it) to the
    fallback; the parts stay with their people. Carl, who may not see the call, is told
    nothing of it, and the fallback is sent no part's question."""
    make_user("fay", email="fay@example.org")
    call = start(
        fastmcp_peer,
        people,
        confirm_first=False,
        escalate_after_seconds=600,
        escalate_user="fay",
    )
    round = call.rounds.get()
    del mailoutbox[:]
    assert engine.remind_due(round.created_at + timedelta(minutes=11)) == 1
    round.refresh_from_db()
    assert round.escalated_at is not None
    told = {mail.to[0]: mail.subject + "\n" + mail.body for mail in mailoutbox}
    assert "carl@example.org" not in told
    assert set(told) <= {"ann@example.org", "bob@example.org"}
    assert SCHEDULE_Q not in told.get("ann@example.org", "")
