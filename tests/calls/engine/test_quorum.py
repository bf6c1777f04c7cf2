"""Quorum rounds against real MCP peers: the fastmcp peer in this process and the
official SDK's in its own. A 2-of-3 quorum of Finance: the first answers are a proposal, the
second approval delivers it once (what the peer received is the proposal), a rejection
delivers a decline, nobody votes twice, the starter cannot approve their own call; comments
are kept in the audit trail and never reach the server."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group

from mrtrweb.calls import engine
from mrtrweb.calls.models import Call, Round, Vote
from mrtrweb.calls.presenting.history import trail
from mrtrweb.calls.presenting.policies import comments_of, policy_states, proposal_view
from mrtrweb.policies.models import Policy
from tests.support.factories import make_connection, make_user
from tests.support.sent import says

pytestmark = pytest.mark.django_db(transaction=True)

APPROVAL = {"approve": True, "replicas": 3, "window": "tonight", "notify": ["ops"]}
COMMENT = "Checked with the on-call team: tonight is fine."


@pytest.fixture(autouse=True)
def _inline(inline_tasks: None) -> None:
    """Answers are delivered inline: the peer has them when the call returns."""


@pytest.fixture
def finance() -> dict[str, Any]:
    group = Group.objects.create(name="Finance")
    people = {name: make_user(name) for name in ("alice", "bob", "cy", "sam")}
    for name in ("alice", "bob", "cy"):
        people[name].groups.add(group)
    return {"group": group, **people}


def quorum_on(conn: Any, group: Group, **fields: Any) -> Policy:
    fields.setdefault("approvals_required", 2)
    return Policy.objects.create(connection=conn, approvers_group=group, **fields)


def start(conn: Any, user: Any, tool: str, arguments: dict[str, Any]) -> Call:
    return engine.start_call(
        connection=conn, method=Call.Method.TOOL, target=tool, arguments=arguments, user=user
    )


def retries(peer: Any, since: int) -> list[dict[str, Any]]:
    """The tools/call requests that carried answers back (resubmissions)."""
    return [
        entry
        for entry in peer.recorded(since)
        if (entry["json"] or {}).get("method") == "tools/call"
        and "inputResponses" in (entry["json"].get("params") or {})
    ]


def test_two_of_three_approvals_deliver_the_proposal_once(
    fastmcp_peer: Any, finance: dict[str, Any]
) -> None:
    conn = make_connection(fastmcp_peer)
    quorum_on(conn, finance["group"])
    call = start(conn, finance["sam"], "approve_deploy", {"service": "api"})
    round = call.rounds.get()
    # Routed to the approvers, not to the starter.
    assert round.assigned_group == finance["group"] and round.assigned_user is None

    since = fastmcp_peer.mark()
    proposal = {"approval": {"action": "accept", "content": APPROVAL}}
    engine.answer(round, proposal, finance["alice"], comment=COMMENT)
    round.refresh_from_db()
    # A proposal, not an answer: the round still waits, unclaimed, and nothing was sent.
    assert round.status == Round.Status.PENDING and round.claimed_by is None
    assert round.proposal == proposal and round.proposed_by == finance["alice"]
    assert retries(fastmcp_peer, since) == []
    assert policy_states([round])[round.pk] == ["approvals 1 of 2"]
    # Others see it by labels: "Replicas: 3", not the property names.
    shown = {item.label: item.value for q in proposal_view(round) for item in q.content}
    assert shown["Replicas"] == "3"

    # A second proposal is refused (the round already has one).
    with pytest.raises(engine.AlreadyAnswered):
        engine.answer(round, proposal, finance["bob"])

    engine.vote(round, finance["bob"], "approve", comment="Fine by me.")
    round.refresh_from_db()
    call.refresh_from_db()
    assert round.status == Round.Status.DELIVERED
    assert round.answers == proposal and round.answered_by == finance["alice"]
    assert call.status == Call.Status.COMPLETED, call.error
    assert call.result["structuredContent"]["answers"] == APPROVAL
    sent = retries(fastmcp_peer, since)
    assert len(sent) == 1
    assert sent[0]["json"]["params"]["inputResponses"] == proposal
    # The comments never left mrtrweb.
    assert COMMENT not in sent[0]["body"] and "Fine by me." not in sent[0]["body"]
    # The third approver is too late: nothing more is sent.
    with pytest.raises(engine.AlreadyAnswered):
        engine.vote(round, finance["cy"], "approve")
    assert len(retries(fastmcp_peer, since)) == 1

    kinds = [event.kind for event in trail(call)]
    assert kinds == [
        "started",
        "round_parked",
        "quorum_proposed",
        "quorum_vote",
        "answered",
        "delivered",
        "completed",
    ]
    assert [(c.author, c.text) for c in comments_of(call)] == [
        (finance["alice"], COMMENT),
        (finance["bob"], "Fine by me."),
    ]


def test_a_rejection_delivers_a_decline(fastmcp_peer: Any, finance: dict[str, Any]) -> None:
    conn = make_connection(fastmcp_peer)
    quorum_on(conn, finance["group"])
    call = start(conn, finance["sam"], "approve_deploy", {"service": "api"})
    round = call.rounds.get()
    since = fastmcp_peer.mark()
    engine.answer(round, {"approval": {"action": "accept", "content": APPROVAL}}, finance["alice"])
    engine.vote(round, finance["cy"], "reject", comment="Not during the freeze.")
    round.refresh_from_db()
    call.refresh_from_db()
    assert round.answers == {"approval": {"action": "decline"}}
    assert round.answered_by == finance["cy"]  # whose rejection declined it
    assert call.status == Call.Status.COMPLETED
    assert call.result["structuredContent"]["status"] == "declined"
    sent = retries(fastmcp_peer, since)
    assert len(sent) == 1
    assert sent[0]["json"]["params"]["inputResponses"] == {"approval": {"action": "decline"}}
    assert not says(sent[0], "freeze")
    assert call.events.get(kind="answered").detail["quorum"] == "rejected"


def test_two_rejections_when_the_policy_says_so(fastmcp_peer: Any, finance: dict[str, Any]) -> None:
    conn = make_connection(fastmcp_peer)
    quorum_on(conn, finance["group"], approvals_required=3, rejections_to_decline=2)
    call = start(conn, finance["sam"], "approve_deploy", {"service": "api"})
    round = call.rounds.get()
    since = fastmcp_peer.mark()
    engine.answer(round, {"approval": {"action": "accept", "content": APPROVAL}}, finance["alice"])
    engine.vote(round, finance["bob"], "reject")
    round.refresh_from_db()
    assert round.is_pending and retries(fastmcp_peer, since) == []
    assert policy_states([round])[round.pk] == ["approvals 1 of 3", "rejections 1 of 2"]
    engine.vote(round, finance["cy"], "reject")
    round.refresh_from_db()
    assert round.answers == {"approval": {"action": "decline"}}
    assert len(retries(fastmcp_peer, since)) == 1


def test_nobody_votes_twice_and_the_starter_cannot_approve(
    fastmcp_peer: Any, finance: dict[str, Any]
) -> None:
    conn = make_connection(fastmcp_peer)
    quorum_on(conn, finance["group"], approvals_required=3)
    # The starter is one of the approvers here.
    call = start(conn, finance["alice"], "approve_deploy", {"service": "api"})
    round = call.rounds.get()
    with pytest.raises(engine.NoProposal):
        engine.vote(round, finance["bob"], "approve")
    engine.answer(round, {"approval": {"action": "accept", "content": APPROVAL}}, finance["bob"])
    round.refresh_from_db()
    assert engine.why_cannot_vote(round, finance["bob"]) == "proposer"
    with pytest.raises(engine.AlreadyVoted):
        engine.vote(round, finance["bob"], "approve")
    assert engine.why_cannot_vote(round, finance["alice"]) == "self"
    with pytest.raises(engine.SelfApproval):
        engine.vote(round, finance["alice"], "approve")
    engine.vote(round, finance["cy"], "approve")
    with pytest.raises(engine.AlreadyVoted):
        engine.vote(round, finance["cy"], "approve")
    with pytest.raises(engine.AlreadyVoted):
        engine.vote(round, finance["cy"], "reject")
    round.refresh_from_db()
    assert round.is_pending
    assert Vote.objects.filter(round=round).count() == 2  # bob's proposal, cy's approval
    assert engine.tally(round) == (2, 0)


def test_self_approval_when_the_policy_allows_it(
    fastmcp_peer: Any, finance: dict[str, Any]
) -> None:
    conn = make_connection(fastmcp_peer)
    quorum_on(conn, finance["group"], allow_self_approval=True)
    call = start(conn, finance["alice"], "approve_deploy", {"service": "api"})
    round = call.rounds.get()
    engine.answer(round, {"approval": {"action": "accept", "content": APPROVAL}}, finance["bob"])
    engine.vote(round, finance["alice"], "approve")
    call.refresh_from_db()
    assert call.status == Call.Status.COMPLETED


def test_a_starters_own_proposal_does_not_count_without_self_approval(
    fastmcp_peer: Any, finance: dict[str, Any]
) -> None:
    conn = make_connection(fastmcp_peer)
    quorum_on(conn, finance["group"])
    call = start(conn, finance["alice"], "approve_deploy", {"service": "api"})
    round = call.rounds.get()
    engine.answer(round, {"approval": {"action": "accept", "content": APPROVAL}}, finance["alice"])
    round.refresh_from_db()
    assert policy_states([round])[round.pk] == ["approvals 0 of 2"]
    engine.vote(round, finance["bob"], "approve")
    round.refresh_from_db()
    assert round.is_pending
    engine.vote(round, finance["cy"], "approve")
    call.refresh_from_db()
    assert call.status == Call.Status.COMPLETED


def test_a_plain_rounds_comment_is_kept_and_never_sent(
    fastmcp_peer: Any, finance: dict[str, Any]
) -> None:
    conn = make_connection(fastmcp_peer)
    call = start(conn, finance["sam"], "approve_deploy", {"service": "api"})
    round = call.rounds.get()
    since = fastmcp_peer.mark()
    engine.answer(
        round,
        {"approval": {"action": "accept", "content": APPROVAL}},
        finance["sam"],
        comment="  Approved after the review call.  ",
    )
    call.refresh_from_db()
    assert call.status == Call.Status.COMPLETED
    assert call.events.get(kind="answered").detail["comment"] == "Approved after the review call."
    round = call.rounds.get()
    assert policy_states([round])[round.pk] == []
    (sent,) = retries(fastmcp_peer, since)
    assert "review call" not in sent["body"]
    assert [c.text for c in comments_of(call)] == ["Approved after the review call."]


def test_the_official_sdk_peer(sdk_peer: Any, finance: dict[str, Any]) -> None:
    """The same 2-of-3 quorum against the official SDK's server (resolver keys)."""
    conn = make_connection(sdk_peer, name="sdk")
    quorum_on(conn, finance["group"])
    call = start(conn, finance["sam"], "confirm_delete", {"path": "/tmp/x"})
    round = call.rounds.get()
    (key,) = round.input_requests
    since = sdk_peer.mark()
    proposal = {key: {"action": "accept", "content": {"sure": True}}}
    engine.answer(round, proposal, finance["alice"], comment="sure, it is scratch")
    assert retries(sdk_peer, since) == []
    engine.vote(round, finance["bob"], "approve", comment="agreed")
    call.refresh_from_db()
    assert call.status == Call.Status.COMPLETED, call.error
    assert call.result["content"][0]["text"] == "deleted /tmp/x"
    (sent,) = retries(sdk_peer, since)
    assert sent["json"]["params"]["inputResponses"] == proposal
    assert not says(sent, "scratch") and not says(sent, "agreed")

    # And a rejection: a decline reaches the SDK's resolver.
    call = start(conn, finance["sam"], "confirm_delete", {"path": "/tmp/y"})
    round = call.rounds.get()
    engine.answer(round, {key: {"action": "accept", "content": {"sure": True}}}, finance["alice"])
    engine.vote(round, finance["cy"], "reject")
    call.refresh_from_db()
    assert call.result["content"][0]["text"] == "kept /tmp/y (decline)"
