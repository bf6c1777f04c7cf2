"""A quorum round through the pages (no JavaScript), the inbox, the admins' list and the API:
the proposer's form with a comment, the approvers' read-only proposal with Approve and
Reject, the requester's call page with the comments, and what the server received."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.http import QueryDict
from django.test import Client
from django.urls import reverse

from mrtrweb.api.models import ApiToken
from mrtrweb.calls import engine
from mrtrweb.calls.models import Call, Round
from mrtrweb.elicitation import prefix_for_key
from mrtrweb.people.roles import ADMINS
from mrtrweb.policies.models import Policy
from tests.calls.pages.client import Pages, visible_text
from tests.elicitation.support import post
from tests.support.factories import make_connection, make_user
from tests.support.sent import says

pytestmark = pytest.mark.django_db(transaction=True)

APPROVAL = {"approve": "on", "replicas": "3", "window": "1", "notify": ["0"]}  # window: tonight
COMMENT = "Ops <b>agreed</b> on the call"


@pytest.fixture(autouse=True)
def _inline(inline_tasks: None) -> None:
    """Answers are delivered inline."""


def answer_data(key: str, answers: dict[str, Any], action: str = "accept") -> dict[str, Any]:
    data: QueryDict = post(prefix_for_key(key), answers)
    return {**{k: data.getlist(k) for k in data}, "action": action}


def client_for(user: Any) -> Pages:
    client = Client()
    client.force_login(user)
    return Pages(client)


def retries(peer: Any, since: int) -> list[dict[str, Any]]:
    return [
        entry
        for entry in peer.recorded(since)
        if (entry["json"] or {}).get("method") == "tools/call"
        and "inputResponses" in (entry["json"].get("params") or {})
    ]


@pytest.fixture
def setup(fastmcp_peer: Any) -> dict[str, Any]:
    group = Group.objects.create(name="Finance")
    people = {name: make_user(name) for name in ("alice", "bob", "cy", "sam")}
    for name in ("alice", "bob", "cy"):
        people[name].groups.add(group)
    conn = make_connection(fastmcp_peer)
    Policy.objects.create(connection=conn, approvals_required=2, approvers_group=group)
    call = engine.start_call(
        connection=conn,
        method=Call.Method.TOOL,
        target="approve_deploy",
        arguments={"service": "api"},
        user=people["sam"],
    )
    return {"call": call, "round": call.rounds.get(), "peer": fastmcp_peer, **people}


def test_proposal_then_approval_through_the_pages(setup: dict[str, Any]) -> None:
    round, call, peer = setup["round"], setup["call"], setup["peer"]
    alice, bob, sam = (client_for(setup[n]) for n in ("alice", "bob", "sam"))
    url = round.get_absolute_url()

    page = alice.get(url)
    body = visible_text(page)
    assert "Needs 2 approvals" in body and "approvals 0 of 2" in body
    assert "Comment for the requester (optional)" in body
    assert "never sent to the server" in body
    assert "Claim" not in body  # a quorum round is nobody's alone

    # The inbox of every approver says where the quorum stands.
    inbox = visible_text(client_for(setup["cy"]).get(reverse("inbox:index")))
    assert "approvals 0 of 2" in inbox

    since = peer.mark()
    done = alice.post(url, {**answer_data("approval", APPROVAL), "comment": COMMENT})
    assert done.status_code == 303
    assert retries(peer, since) == []
    round.refresh_from_db()
    assert round.is_pending and round.proposed_by == setup["alice"]

    # Alice sees her own proposal, counted; she cannot approve it again.
    mine = visible_text(alice.get(url))
    assert "These are your answers" in mine and "approvals 1 of 2" in mine
    refused = alice.post(url, {"action": "approve"})
    assert refused.status_code == 409
    assert "You already voted on this proposal." in visible_text(refused)

    # Bob sees the proposal read only, by its labels, with Approve and Reject.
    theirs = bob.get(url)
    text = visible_text(theirs)
    assert "Proposed by alice" in text
    assert "Replicas 3" in text and "Deployment window Tonight at 22:00" in text
    assert 'name="approve"' not in theirs.content.decode()  # no answer form
    assert "Approve" in text and "Reject" in text
    assert "approvals 1 of 2" in visible_text(client_for(setup["cy"]).get(reverse("inbox:index")))

    # The admins' list has a column of each policy's state.
    admin = client_for(make_user("root", ADMINS))
    listed = visible_text(admin.get(reverse("dashboard:rounds")))
    assert "Policies" in listed and "approvals 1 of 2" in listed

    # The requester, outside Finance, cannot vote: the post is a 404, nothing recorded.
    assert sam.post(url, {"action": "approve"}).status_code == 404
    # Bob approves with a comment: the proposal is delivered, once.
    approved = bob.post(url, {"action": "approve", "comment": "Fine by me."})
    assert approved.status_code == 303
    call.refresh_from_db()
    assert call.status == Call.Status.COMPLETED, call.error
    (sent,) = retries(peer, since)
    assert sent["json"]["params"]["inputResponses"] == {
        "approval": {
            "action": "accept",
            "content": {"approve": True, "replicas": 3, "window": "tonight", "notify": ["ops"]},
        }
    }
    assert not says(sent, "agreed") and not says(sent, "Fine by me")

    # The requester reads the comments on the call page, escaped.
    page = sam.get(call.get_absolute_url())
    html = page.content.decode()
    assert "Ops &lt;b&gt;agreed&lt;/b&gt; on the call" in html
    shown = visible_text(page)
    assert "Comments" in shown and "alice proposed answers" in shown
    assert "bob approved" in shown and "Fine by me." in shown
    # The audit trail keeps the proposal, the vote and their comments.
    audit = visible_text(admin.get(reverse("dashboard:call_audit", kwargs={"pk": call.pk})))
    assert "Proposed: waiting for approvals" in audit and "Voted on the proposal" in audit
    assert "Fine by me." in audit and "Ops <b>agreed</b> on the call" in audit
    # A late vote: the round is closed.
    late = client_for(setup["cy"]).post(url, {"action": "approve"})
    assert late.status_code == 409
    assert Round.objects.get(pk=round.pk).status == Round.Status.DELIVERED


def test_a_rejection_through_the_page(setup: dict[str, Any]) -> None:
    round, call, peer = setup["round"], setup["call"], setup["peer"]
    url = round.get_absolute_url()
    since = peer.mark()
    client_for(setup["alice"]).post(url, answer_data("approval", APPROVAL))
    rejected = client_for(setup["cy"]).post(url, {"action": "reject", "comment": "Freeze week"})
    assert rejected.status_code == 303
    call.refresh_from_db()
    assert call.result["structuredContent"]["status"] == "declined"
    (sent,) = retries(peer, since)
    assert sent["json"]["params"]["inputResponses"] == {"approval": {"action": "decline"}}
    assert not says(sent, "Freeze")
    assert "cy rejected" in visible_text(client_for(setup["sam"]).get(call.get_absolute_url()))


def test_a_second_proposer_is_shown_the_first_and_keeps_what_they_typed(
    setup: dict[str, Any],
) -> None:
    url = setup["round"].get_absolute_url()
    client_for(setup["alice"]).post(url, answer_data("approval", APPROVAL))
    mine = {**APPROVAL, "replicas": "7"}
    late = client_for(setup["bob"]).post(url, answer_data("approval", mine))
    assert late.status_code == 409
    text = visible_text(late)
    assert "Someone proposed answers before you" in text
    assert "Replicas 7" in text  # what bob typed, read back
    assert "Proposed by alice" in text and "Replicas 3" in text


def test_the_api_takes_a_comment_and_never_sends_it(setup: dict[str, Any]) -> None:
    """A plain round (no policy) answered through the API with a comment."""
    conn = make_connection(setup["peer"], name="plain")
    call = engine.start_call(
        connection=conn,
        method=Call.Method.TOOL,
        target="approve_deploy",
        arguments={"service": "web"},
        user=setup["sam"],
    )
    round = call.rounds.get()
    _, secret = ApiToken.issue(setup["sam"], "quorum test")
    since = setup["peer"].mark()
    response = Client().post(
        f"/api/v1/rounds/{round.pk}/responses",
        {
            "responses": {
                "approval": {
                    "action": "accept",
                    "content": {"approve": True, "replicas": 2, "window": "now", "notify": []},
                }
            },
            "comment": "From the release pipeline",
        },
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {secret}",
    )
    assert response.status_code == 202, response.content
    call.refresh_from_db()
    assert call.events.get(kind="answered").detail["comment"] == "From the release pipeline"
    (sent,) = retries(setup["peer"], since)
    assert not says(sent, "pipeline")
