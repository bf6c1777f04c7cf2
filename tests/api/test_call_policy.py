"""A program gives a call its own approval policy (operators' and admins' tokens only): it
is checked like the console's form, stored on the call and shown back, and applies to that
call only (a restart takes the configured policy)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.urls import reverse

from mrtrweb.calls import engine
from mrtrweb.calls.models import Call
from mrtrweb.policies.models import Policy
from tests.api.support import Api, person, pointers, problem, start
from tests.inbox.support import admin, browser

pytestmark = pytest.mark.django_db


@pytest.fixture
def finance() -> Group:
    group = Group.objects.create(name="Finance")
    for name in ("fay", "fred", "fio"):
        person(name).groups.add(group)
    return group


def test_an_operator_starts_a_call_with_its_own_policy(
    peer_conn: Any, op_api: Api, finance: Group
) -> None:
    # The connection's own policy is replaced, not merged: the call says what it runs under.
    Policy.objects.create(connection=peer_conn, reminders=[0.5])
    started = start(
        op_api,
        policy={
            "approvalsRequired": 2,
            "approversGroup": "Finance",
            "reminders": [0.9, 0.5],
        },
    )
    assert started.status_code == 201, started.content
    assert started.json()["policy"] == {
        "approvalsRequired": 2,
        "approversGroup": "Finance",
        "reminders": [0.5, 0.9],
    }
    call = Call.objects.get(pk=started.json()["id"])
    assert call.policy["approvals_required"] == 2
    plain = start(op_api)
    assert plain.json()["policy"] == {"reminders": [0.5]}  # the configured one


def test_end_users_cannot_lift_a_policy(peer_conn: Any, ann_api: Api) -> None:
    Policy.objects.create(connection=peer_conn, tool_name="approve_deploy", reminders=[0.5])
    refused = start(ann_api, policy={"approvalsRequired": 1})
    assert refused.status_code == 403
    assert problem(refused)["type"].endswith("#problem-forbidden")
    assert not Call.objects.exists()


def test_a_policy_that_cannot_work_is_refused_where_it_is_wrong(
    peer_conn: Any, op_api: Api, finance: Group
) -> None:
    cases = [
        ({"approvalsRequired": 5, "approversGroup": "Finance"}, "/policy/approvalsRequired"),
        ({"splitRoutes": {"budget": {"group": "Nobody"}}}, "/policy/splitRoutes/budget"),
        # Split rounds and a quorum do not combine.
        (
            {
                "approvalsRequired": 2,
                "approversGroup": "Finance",
                "splitRoutes": {"budget": {"group": "Finance"}},
            },
            "/policy/splitRoutes",
        ),
        ({"reminders": [1.2]}, "/policy/reminders"),
        ({"escalateAfterSeconds": 60}, "/policy/escalateUser"),
        ({"escalateUser": "ghost", "escalateAfterSeconds": 60}, "/policy/escalateUser"),
        ({"approvalsRequired": 0}, "/policy/approvalsRequired"),
        ({"quorum": 2}, "/policy/quorum"),
    ]
    for policy, pointer in cases:
        refused = start(op_api, policy=policy)
        assert refused.status_code == 422, (policy, refused.content)
        assert pointer in pointers(refused), (policy, refused.content)
    assert not Call.objects.exists()


def test_a_restart_takes_todays_policy_never_the_operators_own(
    peer_conn: Any, op_api: Api, finance: Group
) -> None:
    configured = Policy.objects.create(connection=peer_conn, reminders=[0.5])
    started = start(op_api, policy={"approvalsRequired": 2, "approversGroup": "Finance"})
    assert started.status_code == 201, started.content
    call = Call.objects.get(pk=started.json()["id"])
    engine.expire(call.rounds.get(), None)
    # The configured policy changes while the call lies expired.
    configured.reminders = [0.9]
    configured.save()
    # Whoever starts it again (an admin, or the operator who gave the policy) gets what a
    # fresh start of the tool gets now.
    otto = call.started_by
    for who in (admin("root"), otto):
        again = browser(who).post(reverse("calls:restart", kwargs={"pk": call.pk}))
        assert again.status_code == 303, again.content
    restarts = Call.objects.filter(restarted_from=call).order_by("pk")
    assert [c.started_by.get_username() for c in restarts] == ["root", "otto"]
    assert [c.policy for c in restarts] == [{"reminders": [0.9]}, {"reminders": [0.9]}]
    shown = op_api.get(f"/calls/{restarts[1].pk}")
    assert shown.json()["policy"] == {"reminders": [0.9]}
