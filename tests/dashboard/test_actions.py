"""Admins act on rounds from the dashboard: cancel, expire, reassign, release, one or many.

Real rounds parked by the fastmcp peer (``approve_deploy``); delivery runs inline at commit
(ImmediateBackend + transactional tests), so a cancel has reached the server when the post
returns, and the peer's recorded requests prove what it was told.
"""

from __future__ import annotations

import re
from html import unescape
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.core import mail
from django.test import Client
from django.urls import reverse

from mrtrweb.calls import engine
from mrtrweb.calls.models import Call, Event, Round
from mrtrweb.servers.models import Connection, Routing
from tests.dashboard.support import (
    client_for,
    make_admin,
    make_user,
    row_ids,
    text,
    visible_text,
)

pytestmark = pytest.mark.django_db(transaction=True)

ROUNDS = reverse("dashboard:rounds")
BULK = reverse("dashboard:bulk")
HTMX = {"HTTP_HX_REQUEST": "true", "HTTP_HX_CURRENT_URL": "http://testserver" + ROUNDS}
APPROVAL = {"approve": True, "replicas": 3, "window": "tonight"}


@pytest.fixture(autouse=True)
def _inline_tasks(inline_tasks: None) -> None:
    """Every test here delivers answers inline."""


@pytest.fixture
def root() -> Any:
    return make_admin("root")


@pytest.fixture
def web(root: Any) -> Client:
    return client_for(root)


@pytest.fixture
def ann() -> Any:
    return make_user("ann", "End users")


@pytest.fixture
def conn(fastmcp_peer: Any) -> Connection:
    return Connection.objects.create(name="peer", title="Test peer", url=fastmcp_peer.url)


def park(conn: Connection, user: Any, service: str = "api") -> Round:
    call = engine.start_call(
        connection=conn,
        method=Call.Method.TOOL,
        target="approve_deploy",
        arguments={"service": service},
        user=user,
    )
    assert call.status == Call.Status.WAITING, call.error
    return call.rounds.get()


def tool_calls(peer: Any, since: int) -> list[dict[str, Any]]:
    return [r for r in peer.recorded(since) if (r["json"] or {}).get("method") == "tools/call"]


def messages_in(response: Any) -> list[str]:
    return [
        unescape(re.sub(r"\s+", " ", m).strip())
        for m in re.findall(r'<li class="message [a-z]+">(.*?)</li>', text(response), re.S)
    ]


def refreshed(round: Round) -> Round:
    return Round.objects.get(pk=round.pk)


# -- cancel ------------------------------------------------------------------------------------


def test_cancelling_a_round_tells_the_server(
    web: Client, conn: Connection, ann: Any, fastmcp_peer: Any
) -> None:
    round = park(conn, ann)
    since = fastmcp_peer.mark()
    response = web.post(
        BULK, {"confirmed": "1", "one": f"cancel:{round.pk}", "next": ROUNDS}, follow=True
    )
    assert response.redirect_chain == [(ROUNDS, 303)]
    assert messages_in(response) == ["Cancel (tell the server): 1 cancelled."]

    sent = tool_calls(fastmcp_peer, since)
    assert len(sent) == 1
    params = sent[0]["json"]["params"]
    assert params["inputResponses"] == {"approval": {"action": "cancel"}}
    assert params["requestState"] == round.request_state
    round = refreshed(round)
    assert round.status == Round.Status.DELIVERED
    assert round.answered_by.username == "root"
    call = round.call
    assert call.status == Call.Status.COMPLETED
    assert call.result["structuredContent"]["status"] == "cancelled"
    answered = call.events.get(kind="answered")
    assert answered.actor.username == "root"
    assert answered.detail["answers"] == {"approval": {"action": "cancel"}}
    # Gone from the pending list.
    assert round.pk not in row_ids(web.get(ROUNDS))


def test_bulk_cancel_reports_each_outcome(
    web: Client, conn: Connection, ann: Any, fastmcp_peer: Any
) -> None:
    first, second, answered = (park(conn, ann, s) for s in ("a", "b", "c"))
    engine.answer(answered, {"approval": {"action": "accept", "content": APPROVAL}}, ann)
    assert refreshed(answered).status == Round.Status.DELIVERED
    since = fastmcp_peer.mark()

    response = web.post(
        BULK,
        {
            "confirmed": "1",
            "action": "cancel",
            "rounds": [first.pk, second.pk, answered.pk, 999_999],
            "next": ROUNDS,
        },
        follow=True,
    )
    assert messages_in(response) == [
        "Cancel (tell the server): 2 cancelled, 1 already answered, 1 not found."
    ]
    assert 'class="message warning"' in text(response)
    sent = tool_calls(fastmcp_peer, since)
    assert sorted(s["json"]["params"]["arguments"]["service"] for s in sent) == ["a", "b"]
    assert all(
        s["json"]["params"]["inputResponses"] == {"approval": {"action": "cancel"}} for s in sent
    )
    assert refreshed(answered).call.result["structuredContent"]["status"] == "deployed"


# -- expire ------------------------------------------------------------------------------------


def test_expire_sends_nothing_and_says_what_was_already_closed(
    web: Client, conn: Connection, ann: Any, fastmcp_peer: Any
) -> None:
    open_round, cancelled = park(conn, ann, "a"), park(conn, ann, "b")
    web.post(BULK, {"confirmed": "1", "one": f"cancel:{cancelled.pk}"}, follow=True)
    since = fastmcp_peer.mark()
    response = web.post(
        BULK,
        {"confirmed": "1", "action": "expire", "rounds": [open_round.pk, cancelled.pk]},
        follow=True,
    )
    assert messages_in(response) == ["Expire: 1 expired, 1 already answered."]
    assert tool_calls(fastmcp_peer, since) == []
    open_round = refreshed(open_round)
    assert open_round.status == Round.Status.EXPIRED
    assert open_round.call.status == Call.Status.EXPIRED
    expired = open_round.call.events.get(kind="expired")
    assert expired.actor.username == "root"

    again = web.post(
        BULK, {"confirmed": "1", "action": "expire", "rounds": [open_round.pk]}, follow=True
    )
    assert messages_in(again) == ["Expire: 1 already expired."]
    assert 'class="message error"' in text(again)


# -- reassign and release ----------------------------------------------------------------------


def test_reassign_to_a_user_or_a_group(web: Client, conn: Connection, ann: Any) -> None:
    bob = make_user("bob")
    approvers = Group.objects.create(name="approvers")
    carl = make_user("carl")
    carl.groups.add(approvers)
    one, two = park(conn, ann, "a"), park(conn, ann, "b")
    mail.outbox.clear()

    response = web.post(
        BULK,
        {"confirmed": "1", "action": "reassign", "rounds": [one.pk, two.pk], "assign_user": "bob"},
        follow=True,
    )
    assert messages_in(response) == ["Reassign: 2 reassigned."]
    assert {refreshed(r).assigned_user_id for r in (one, two)} == {bob.pk}
    assert sorted(m.to[0] for m in mail.outbox) == ["bob@example.test", "bob@example.test"]
    event = one.call.events.get(kind="reassigned")
    assert (event.actor.username, event.detail["assigned_user"]) == ("root", "bob")

    mail.outbox.clear()
    web.post(
        BULK,
        {"confirmed": "1", "action": "reassign", "rounds": [one.pk], "assign_group": "approvers"},
    )
    one = refreshed(one)
    assert (one.assigned_user_id, one.assigned_group_id) == (None, approvers.pk)
    assert [m.to for m in mail.outbox] == [["carl@example.test"]]
    assert row_ids(web.get(ROUNDS, {"group": "approvers"})) == [one.pk]
    assert row_ids(web.get(ROUNDS, {"assignee": "bob"})) == [two.pk]


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({}, "Reassign to one user or one group: fill in exactly one of the two."),
        (
            {"assign_user": "bob", "assign_group": "approvers"},
            "Reassign to one user or one group: fill in exactly one of the two.",
        ),
        ({"assign_user": "nobody"}, "There is no active user 'nobody'."),
        ({"assign_group": "nobody"}, "There is no group 'nobody'."),
    ],
)
def test_reassign_needs_exactly_one_existing_target(
    web: Client, root: Any, fields: dict[str, str], problem: str
) -> None:
    from tests.dashboard.support import make_connection, make_round

    make_user("bob")
    Group.objects.create(name="approvers")
    round = make_round(connection=make_connection(), starter=root)
    response = web.post(
        BULK, {"confirmed": "1", "action": "reassign", "rounds": [round.pk], **fields}, follow=True
    )
    assert messages_in(response) == [problem]
    assert refreshed(round).assigned_user_id == root.pk


def test_release_a_claimed_group_round(web: Client, conn: Connection, ann: Any) -> None:
    approvers = Group.objects.create(name="approvers")
    carl = make_user("carl")
    carl.groups.add(approvers)
    conn.routing, conn.route_group = Routing.GROUP, approvers
    conn.save()
    claimed, unclaimed = park(conn, ann, "a"), park(conn, ann, "b")
    assert claimed.assigned_group_id == approvers.pk
    engine.claim(claimed, carl)
    body = text(web.get(ROUNDS))
    assert f'value="release:{claimed.pk}"' in body
    assert f'value="release:{unclaimed.pk}"' not in body

    response = web.post(
        BULK,
        {"confirmed": "1", "action": "release", "rounds": [claimed.pk, unclaimed.pk]},
        follow=True,
    )
    assert messages_in(response) == ["Release the claim: 1 released, 1 not claimed."]
    assert refreshed(claimed).claimed_by_id is None
    assert claimed.call.events.filter(kind="released", actor__username="root").exists()


# -- the page updates in place with htmx, or posts, redirects and gets ---------------------------


def test_htmx_bulk_swaps_the_rows_and_keeps_the_filters(
    web: Client, conn: Connection, ann: Any
) -> None:
    rounds = [park(conn, ann, s) for s in ("a", "b", "c")]
    next_url = f"{ROUNDS}?sort=created&server=peer"
    response = web.post(
        BULK,
        {"confirmed": "1", "action": "expire", "rounds": [rounds[0].pk], "next": next_url},
        **HTMX,
    )
    assert response.status_code == 200
    body = text(response)
    assert body.lstrip().startswith('<form id="round-results"')
    assert messages_in(response) == ["Expire: 1 expired."]
    # The same list, in the same order, without the expired round.
    assert row_ids(response) == [rounds[1].pk, rounds[2].pk]
    assert f'name="next" value="{next_url.replace("&", "&amp;")}"' in body
    # The message was shown once: the next page does not repeat it.
    assert "1 expired" not in visible_text(web.get(ROUNDS))


def test_without_javascript_post_redirect_get_keeps_the_filters(
    web: Client, conn: Connection, ann: Any
) -> None:
    round = park(conn, ann)
    response = web.post(
        BULK,
        {
            "confirmed": "1",
            "action": "expire",
            "rounds": [round.pk],
            "next": f"{ROUNDS}?server=peer&age=1h",
        },
    )
    assert response.status_code == 303
    assert response["Location"] == f"{ROUNDS}?server=peer&age=1h"
    # Only the dashboard's own list is a place to go back to.
    for elsewhere in ("https://evil.example/dashboard/rounds/", "/calls/", "//evil.example/x"):
        bounced = web.post(
            BULK, {"confirmed": "1", "action": "expire", "rounds": [round.pk], "next": elsewhere}
        )
        assert bounced["Location"] == ROUNDS, elsewhere


def test_nothing_chosen_is_said_plainly(web: Client, root: Any) -> None:
    assert messages_in(web.post(BULK, {"confirmed": "1", "rounds": ["1"]}, follow=True)) == [
        "Choose an action."
    ]
    assert messages_in(web.post(BULK, {"confirmed": "1", "action": "cancel"}, follow=True)) == [
        "Tick at least one round."
    ]
    too_many = [str(i) for i in range(1, 102)]
    assert messages_in(
        web.post(BULK, {"confirmed": "1", "action": "cancel", "rounds": too_many}, follow=True)
    ) == ["At most 100 rounds at a time."]
    assert messages_in(web.post(BULK, {"confirmed": "1", "one": "explode:1"}, follow=True)) == [
        "Choose an action."
    ]


# -- who may act ---------------------------------------------------------------------------------


def test_actions_need_an_admin_and_the_csrf_token(
    conn: Connection, ann: Any, root: Any, fastmcp_peer: Any
) -> None:
    round = park(conn, ann)
    since = fastmcp_peer.mark()
    # The round's own assignee is not an admin: answering is theirs, cancelling others' is not.
    assert (
        client_for(ann).post(BULK, {"confirmed": "1", "one": f"cancel:{round.pk}"}).status_code
        == 403
    )
    assert Client().post(BULK, {"confirmed": "1", "one": f"cancel:{round.pk}"}).status_code == 302
    guarded = client_for(root, enforce_csrf_checks=True)
    assert guarded.post(BULK, {"confirmed": "1", "one": f"cancel:{round.pk}"}).status_code == 403
    assert guarded.get(BULK).status_code == 405
    assert refreshed(round).status == Round.Status.PENDING
    assert tool_calls(fastmcp_peer, since) == []
    assert not Event.objects.filter(kind="answered").exists()

    # With the token the page carries (as htmx sends it, in a header), it goes through.
    page = text(guarded.get(ROUNDS))
    token = re.search(r'"X-CSRFToken": "([^"]+)"', page).group(1)
    ok = guarded.post(
        BULK, {"confirmed": "1", "one": f"cancel:{round.pk}"}, HTTP_X_CSRFTOKEN=token, **HTMX
    )
    assert ok.status_code == 200
    assert refreshed(round).status == Round.Status.DELIVERED
