"""Routing with a real peer: to a named user, to a group whose members claim, per-tool
overrides, and resubmission under the call's own connection credentials.

Everything goes through the pages as people use them; answers are delivered inline
(ImmediateBackend in transactional tests), so the peer really receives each retry.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from mrtrweb.calls.models import Call, Event, Round
from mrtrweb.calls.presenting.history import trail
from mrtrweb.elicitation import field_name_for
from mrtrweb.servers.models import Connection, Routing, ToolExposure
from tests.inbox.support import (
    APPROVERS,
    admin,
    answer_data,
    ask,
    browser,
    connection,
    expose,
    group,
    person,
    round_links,
    state,
    text,
    to_group,
    to_user,
    visible_text,
)
from tests.support.sent import says

pytestmark = pytest.mark.django_db(transaction=True)

INBOX = reverse("inbox:index")


@pytest.fixture(autouse=True)
def _inline_tasks(inline_tasks: None) -> None:
    """Every test here delivers answers inline."""


def start_from_the_page(web: Any, conn: Connection, tool: str, **arguments: str) -> Call:
    url = reverse("starting:start", kwargs={"connection": conn.name}) + f"?tool={tool}"
    data = {f"arg-{field_name_for(k)}": v for k, v in arguments.items()}
    response = web.post(url, {**data, "start": "1"})
    assert response.status_code == 303, text(response)
    return Call.objects.filter(target=tool).latest("pk")


def tool_calls(peer: Any, since: int) -> list[dict[str, Any]]:
    return [r for r in peer.recorded(since) if (r["json"] or {}).get("method") == "tools/call"]


def headers_of(request: dict[str, Any]) -> dict[str, str]:
    return {name: value for name, value in request["headers"]}


def test_a_connection_routed_to_a_named_user(fastmcp_peer: Any) -> None:
    ada, bob = person("ada"), person("bob")
    ada_web, bob_web = browser(ada), browser(bob)
    conn = expose(to_user(fastmcp_peer, bob), "approve_deploy")
    call = start_from_the_page(ada_web, conn, "approve_deploy", service="api")
    round = call.rounds.get()
    assert (round.assigned_user, round.assigned_group) == (bob, None)
    assert round.pk in round_links(bob_web.get(INBOX))
    assert round.pk not in round_links(ada_web.get(INBOX))
    # The caller may look at the question but not answer it.
    looking = ada_web.get(round.get_absolute_url())
    assert looking.status_code == 200 and "Deploy api to staging?" in visible_text(looking)
    assert 'value="accept"' not in text(looking)
    assert ada_web.post(round.get_absolute_url(), answer_data()).status_code == 404

    answered = bob_web.post(round.get_absolute_url(), answer_data())
    assert answered.status_code == 303
    call.refresh_from_db()
    assert call.status == Call.Status.COMPLETED, call.error
    result = visible_text(ada_web.get(call.get_absolute_url()))
    assert "Deployed api to staging: 3 replicas, window tonight" in result
    assert round.pk not in round_links(bob_web.get(INBOX))


def test_a_group_round_claimed_by_one_member_and_answered(fastmcp_peer: Any) -> None:
    ada, bea, carl = person("ada", APPROVERS), person("bea", APPROVERS), person("carl")
    ada_web, bea_web = browser(ada), browser(bea)
    conn = expose(to_group(fastmcp_peer), "approve_deploy")
    call = start_from_the_page(browser(carl), conn, "approve_deploy", service="api")
    round = call.rounds.get()
    assert (round.assigned_user, round.assigned_group) == (None, group(APPROVERS))
    for web in (ada_web, bea_web):
        page = web.get(round.get_absolute_url())
        assert "nobody has claimed it yet" in visible_text(page)
        assert f'action="/rounds/{round.pk}/claim/"' in text(page)

    claimed = ada_web.post(reverse("calls:claim", args=[round.pk]))
    assert (claimed.status_code, claimed["Location"]) == (303, round.get_absolute_url())
    page = ada_web.get(round.get_absolute_url())
    assert "Claimed by you" in visible_text(page)
    assert "/claim/" not in text(page) and 'value="accept"' in text(page)
    assert "Give it back" in visible_text(page)

    before = state()
    assert round.pk not in round_links(bea_web.get(INBOX))
    # Another member is told who took it, never a bare 404; nothing they post changes a thing.
    looked = bea_web.get(round.get_absolute_url())
    assert looked.status_code == 200 and "ada took this round" in visible_text(looked)
    assert 'value="accept"' not in text(looked)
    assert bea_web.post(round.get_absolute_url(), answer_data()).status_code == 409
    assert bea_web.post(reverse("calls:claim", args=[round.pk])).status_code == 409
    assert bea_web.post(reverse("calls:release", args=[round.pk])).status_code == 404
    assert state() == before

    assert ada_web.post(round.get_absolute_url(), answer_data()).status_code == 303
    round.refresh_from_db()
    call.refresh_from_db()
    assert (round.status, round.answered_by, round.claimed_by) == (Round.Status.DELIVERED, ada, ada)
    assert call.status == Call.Status.COMPLETED, call.error
    kinds = [event.kind for event in trail(call)]
    assert kinds == ["started", "round_parked", "claimed", "answered", "delivered", "completed"]
    assert call.events.get(kind="claimed").actor == ada
    assert round.pk in round_links(ada_web.get(reverse("inbox:history")))


def test_answering_a_group_round_without_claiming_it_claims_it(fastmcp_peer: Any) -> None:
    bea = person("bea", APPROVERS)
    person("ada", APPROVERS)
    round = ask(to_group(fastmcp_peer), person("carl"))
    assert browser(bea).post(round.get_absolute_url(), answer_data()).status_code == 303
    round.refresh_from_db()
    assert (round.answered_by, round.claimed_by) == (bea, bea)
    assert round.claimed_at == round.answered_at
    assert round.call.status == Call.Status.COMPLETED


def test_an_admin_releases_a_claim_from_the_round_page(fastmcp_peer: Any) -> None:
    ada, bea, root = person("ada", APPROVERS), person("bea", APPROVERS), admin("root")
    round = ask(to_group(fastmcp_peer), person("carl"))
    browser(ada).post(reverse("calls:claim", args=[round.pk]))
    bea_web, root_web = browser(bea), browser(root)
    assert round.pk not in round_links(bea_web.get(INBOX))

    page = root_web.get(round.get_absolute_url())
    assert "claimed by ada" in visible_text(page)
    assert f'action="/rounds/{round.pk}/release/"' in text(page)
    assert "Release the claim" in visible_text(page)
    released = root_web.post(reverse("calls:release", args=[round.pk]))
    assert (released.status_code, released["Location"]) == (303, round.get_absolute_url())
    round.refresh_from_db()
    assert round.claimed_by is None and round.is_pending
    assert Event.objects.get(kind="released").actor == root

    back = bea_web.get(INBOX)
    assert round.pk in round_links(back)
    assert f"/rounds/{round.pk}/claim/" in text(back)
    # Releasing what is not claimed is a conflict, shown on the round page.
    again = root_web.post(reverse("calls:release", args=[round.pk]))
    assert again.status_code == 409
    assert "Only a claimed round" in visible_text(again)


def test_a_member_gives_back_the_round_they_claimed(fastmcp_peer: Any) -> None:
    ada, bea = person("ada", APPROVERS), person("bea", APPROVERS)
    round = ask(to_group(fastmcp_peer), person("carl"))
    ada_web = browser(ada)
    ada_web.post(reverse("calls:claim", args=[round.pk]))
    assert ada_web.post(reverse("calls:release", args=[round.pk])).status_code == 303
    round.refresh_from_db()
    assert round.claimed_by is None
    assert round.pk in round_links(browser(bea).get(INBOX))
    assert Event.objects.get(kind="released").actor == ada


def test_claims_that_cannot_be(fastmcp_peer: Any) -> None:
    ada, root = person("ada", APPROVERS), admin("root")
    own = ask(connection(fastmcp_peer), ada)
    not_a_group_round = browser(ada).post(reverse("calls:claim", args=[own.pk]))
    assert not_a_group_round.status_code == 409
    assert "Only a group's round" in visible_text(not_a_group_round)

    grouped = ask(to_group(fastmcp_peer), person("carl"))
    browser(ada).post(reverse("calls:claim", args=[grouped.pk]))
    # Claiming again is harmless; an admin cannot take it over without releasing it first.
    assert browser(ada).post(reverse("calls:claim", args=[grouped.pk])).status_code == 303
    taken = browser(root).post(reverse("calls:claim", args=[grouped.pk]))
    assert taken.status_code == 409
    assert "ada took this round" in visible_text(taken)
    grouped.refresh_from_db()
    assert grouped.claimed_by == ada


def test_a_tool_overrides_the_connection_routing(fastmcp_peer: Any) -> None:
    ada, bob, bea = person("ada"), person("bob"), person("bea", APPROVERS)
    conn = connection(fastmcp_peer)  # the default: the caller answers
    ToolExposure.objects.create(
        connection=conn,
        tool_name="approve_deploy",
        exposed=True,
        routing=Routing.GROUP,
        route_group=group(APPROVERS),
    )
    ToolExposure.objects.create(
        connection=conn, tool_name="purchase", exposed=True, routing=Routing.USER, route_user=bob
    )
    ToolExposure.objects.create(connection=conn, tool_name="two_questions", exposed=True)
    web = browser(ada)
    deploy = start_from_the_page(web, conn, "approve_deploy", service="api").rounds.get()
    purchase = start_from_the_page(web, conn, "purchase", item="tea").rounds.get()
    inherit = start_from_the_page(web, conn, "two_questions").rounds.get()

    assert (deploy.assigned_user, deploy.assigned_group) == (None, group(APPROVERS))
    assert (purchase.assigned_user, purchase.assigned_group) == (bob, None)
    assert (inherit.assigned_user, inherit.assigned_group) == (ada, None)
    assert round_links(browser(bea).get(INBOX)) == {deploy.pk}
    assert round_links(browser(bob).get(INBOX)) == {purchase.pk}
    assert round_links(web.get(INBOX)) == {inherit.pk}

    # The override wins over a connection routed elsewhere too.
    conn.routing, conn.route_user = Routing.USER, bob
    conn.save()
    again = start_from_the_page(web, conn, "approve_deploy", service="web").rounds.get()
    assert again.assigned_group == group(APPROVERS)
    assert start_from_the_page(web, conn, "two_questions").rounds.get().assigned_user == bob


def test_a_round_answered_by_someone_else_is_resubmitted_with_the_calls_credentials(
    fastmcp_peer: Any,
) -> None:
    conn = to_group(fastmcp_peer)
    conn.bearer_token = "token-of-the-connection"
    conn.headers = {"X-Tenant": "acme"}
    conn.save()
    bea = person("bea", APPROVERS)
    since = fastmcp_peer.mark()
    round = ask(conn, person("carl"))
    # An operator replacing the secrets later does not change whose call this is.
    conn.bearer_token, conn.headers = "a-newer-token", {"X-Tenant": "other"}
    conn.save()
    bea_web = browser(bea)
    assert bea_web.post(round.get_absolute_url(), answer_data()).status_code == 303
    round.call.refresh_from_db()
    assert round.call.status == Call.Status.COMPLETED, round.call.error

    first, retry = tool_calls(fastmcp_peer, since)
    for request in (first, retry):
        headers = headers_of(request)
        assert headers["authorization"] == "Bearer token-of-the-connection"
        assert headers["x-tenant"] == "acme"
        assert "cookie" not in headers  # nothing of the browser that answered
    assert retry["json"]["params"]["requestState"] == round.request_state
    assert retry["json"]["params"]["inputResponses"]["approval"]["action"] == "accept"
    # Nothing names who answered: not their username, nor their address.
    assert not says(retry, bea.get_username()) and not says(retry, bea.email)
