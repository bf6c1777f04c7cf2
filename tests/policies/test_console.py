"""Operators set a connection's and a tool's approval policy on the console's Approval policy
tab; impossible or unsafe policies are refused with the reason, and end users never get in."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.test import Client

from mrtrweb.people.roles import END_USERS, OPERATORS
from mrtrweb.policies.models import Policy
from mrtrweb.policies.resolve import policy_for
from mrtrweb.servers.catalog import refresh_catalog
from mrtrweb.servers.models import Connection
from tests.peers.fixtures import Peer
from tests.support.factories import make_connection, make_user

pytestmark = pytest.mark.django_db

PAGE = "/operators/peer/policy/"


@pytest.fixture
def conn(fastmcp_peer: Peer) -> Connection:
    connection = make_connection(fastmcp_peer, auth="none")
    assert refresh_catalog(connection).ok
    return connection


@pytest.fixture
def otto() -> Client:
    client = Client()
    client.force_login(make_user("otto", OPERATORS))
    return client


def _form(**fields: Any) -> dict[str, Any]:
    base = {
        "renew_for_days": "7",
        "approvals_required": "1",
        "rejections_to_decline": "1",
        "split_decline": "decline-round",
    }
    return {**base, **{k: v for k, v in fields.items() if v is not None}}


def test_the_connections_policy_is_saved_and_each_tool_listed(
    conn: Connection, otto: Client
) -> None:
    finance = Group.objects.create(name="Finance")
    for name in ("fay", "fred", "fio"):
        make_user(name).groups.add(finance)
    page = otto.get(PAGE)
    assert page.status_code == 200
    html = page.content.decode()
    assert 'aria-current="page">Approval policy' in html
    assert "approve_deploy" in html and "one person answers" in html
    saved = otto.post(
        PAGE,
        _form(
            approvals_required="2",
            approvers_group="Finance",
            reminders="90, 50%",
            escalate_after_hours="4",
            escalate_group="Finance",
        ),
    )
    assert saved.status_code == 303, saved.content.decode()[:2000]
    policy = policy_for(conn, "approve_deploy")
    assert policy.approvals_required == 2 and policy.approvers_group == "Finance"
    assert policy.reminders == (0.5, 0.9)
    assert policy.escalate_after_seconds == 4 * 3600 and policy.escalate_group == "Finance"
    listed = otto.get(PAGE).content.decode()
    assert "2 approvals from Finance" in listed and "reminders at 50%, 90%" in listed
    # The form shows what was saved.
    assert 'value="50, 90"' in listed
    # Split rounds instead of the quorum (the two do not combine).
    split = _form(reminders="50, 90", split_routes="budget = group:Finance\nschedule = user:fay")
    assert otto.post(PAGE, split).status_code == 303
    policy = policy_for(conn, "approve_deploy")
    assert policy.split_routes == {"budget": {"group": "Finance"}, "schedule": {"user": "fay"}}
    assert "budget = group:Finance" in otto.get(PAGE).content.decode()


def test_impossible_policies_are_refused_with_the_reason(conn: Connection, otto: Client) -> None:
    small = Group.objects.create(name="Two")
    for name in ("a1", "a2"):
        make_user(name).groups.add(small)
    cases = [
        (_form(approvals_required="3", approvers_group="Two"), "could never be given"),
        (_form(split_routes="budget: Finance"), "write key = group:Name"),
        (_form(split_routes="budget = group:Nobody"), "No group of this name"),
        (
            _form(approvals_required="2", approvers_group="Two", split_routes="b = group:Two"),
            "not both",
        ),
        (_form(reminders="50, 120"), "above 0 and below 100%"),
        (_form(escalate_after_hours="2"), "Name whom to escalate to"),
        (_form(escalate_user="ghost", escalate_after_hours="1"), "No active user of this name"),
    ]
    for data, reason in cases:
        refused = otto.post(PAGE, data)
        assert refused.status_code == 422, reason
        assert reason in refused.content.decode(), reason
    assert not Policy.objects.exists()


def test_renewing_a_tool_that_is_not_idempotent_needs_an_explicit_allowance(
    conn: Connection, otto: Client
) -> None:
    tool_page = PAGE + "?tool=approve_deploy"
    html = otto.get(tool_page).content.decode()
    assert "not marked read-only or idempotent" in html
    data = _form(renew_expired="on", tool="approve_deploy")
    refused = otto.post(PAGE, data)
    assert refused.status_code == 422
    assert "Allow it explicitly" in refused.content.decode()
    allowed = otto.post(PAGE, {**data, "renew_unsafe": "on"})
    assert allowed.status_code == 303
    assert allowed["Location"] == tool_page
    assert policy_for(conn, "approve_deploy").renew_expired
    assert not policy_for(conn, "echo").renew_expired  # a tool's row is its own
    removed = otto.post(PAGE, {"tool": "approve_deploy", "remove": "1"})
    assert removed.status_code == 303
    assert not policy_for(conn, "approve_deploy").renew_expired


def test_only_operators_and_only_offered_tools(conn: Connection) -> None:
    eve = Client()
    eve.force_login(make_user("eve", END_USERS))
    assert eve.get(PAGE).status_code == 403
    assert Client().get(PAGE).status_code == 302  # to sign in
    otto = Client()
    otto.force_login(make_user("otto", OPERATORS))
    assert otto.get(PAGE + "?tool=no_such_tool").status_code == 404
