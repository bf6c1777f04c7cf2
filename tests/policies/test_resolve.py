"""The policy a call starts with: the tool's row over the connection's, stored on the call,
and kept while the call runs even when the policy changed since."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import Group
from django.utils import timezone

from mrtrweb.calls.engine import create_call
from mrtrweb.policies.models import Delegation, Policy
from mrtrweb.policies.resolve import delegate_of, policy_for
from mrtrweb.policies.snapshot import PolicySnapshot
from tests.support.factories import make_connection, make_user

pytestmark = pytest.mark.django_db


def test_no_policy_is_stored_as_nothing() -> None:
    connection = make_connection(url="http://127.0.0.1:9/mcp")
    assert policy_for(connection, "deploy") == PolicySnapshot()
    assert PolicySnapshot().to_json() == {}


def test_the_tools_row_overrides_the_connections_field_by_field() -> None:
    connection = make_connection(url="http://127.0.0.1:9/mcp")
    finance = Group.objects.create(name="Finance")
    Policy.objects.create(connection=connection, reminders=[0.5, 0.9], renew_expired=True)
    Policy.objects.create(
        connection=connection,
        tool_name="deploy",
        approvals_required=2,
        approvers_group=finance,
        renew_for=timedelta(days=2),
        split_routes={"budget": {"group": "Finance"}},
    )
    deploy = policy_for(connection, "deploy")
    assert deploy.quorum and deploy.approvals_required == 2
    assert deploy.approvers_group == "Finance"
    assert deploy.split_routes == {"budget": {"group": "Finance"}}
    assert deploy.renew_expired  # the connection's, left by the tool's row
    assert deploy.renew_for_seconds == 2 * 24 * 3600
    assert deploy.reminders == (0.5, 0.9)
    other = policy_for(connection, "status")
    assert not other.quorum and other.reminders == (0.5, 0.9)
    assert PolicySnapshot.from_json(deploy.to_json()) == deploy


def test_a_call_keeps_the_policy_it_started_with() -> None:
    connection = make_connection(url="http://127.0.0.1:9/mcp")
    ada = make_user("ada")
    row = Policy.objects.create(connection=connection, tool_name="deploy", approvals_required=3)
    call = create_call(
        connection=connection, method="tools/call", target="deploy", arguments={}, user=ada
    )
    row.approvals_required = 1
    row.save()
    call.refresh_from_db()
    assert PolicySnapshot.from_json(call.policy).approvals_required == 3
    given = create_call(
        connection=connection,
        method="tools/call",
        target="deploy",
        arguments={},
        user=ada,
        policy=PolicySnapshot(approvals_required=2),
    )
    assert given.policy == {"approvals_required": 2}


def test_a_delegation_stands_in_while_it_runs() -> None:
    ada, bob = make_user("ada"), make_user("bob")
    now = timezone.now()
    assert delegate_of(ada) == ada
    Delegation.objects.create(person=ada, delegate=bob, until=now + timedelta(days=1))
    assert delegate_of(ada) == bob
    assert delegate_of(ada, now + timedelta(days=2)) == ada
    bob.is_active = False
    bob.save()
    assert delegate_of(ada) == ada
