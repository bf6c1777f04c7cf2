"""A call that names an assignee or a group sends its rounds there, over any policy."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from mrtrweb.calls import engine
from mrtrweb.calls.models import Call
from mrtrweb.servers.models import Connection, Routing

pytestmark = pytest.mark.django_db(transaction=True)


def start(conn: Connection, user: Any, **route: Any) -> Call:
    return engine.start_call(
        connection=conn,
        method=Call.Method.TOOL,
        target="approve_deploy",
        arguments={"service": "api"},
        user=user,
        **route,
    )


def test_the_named_user_or_group_wins_over_the_connections_policy(fastmcp_peer: Any) -> None:
    users = get_user_model().objects
    caller, grace, policy_user = (users.create_user(n) for n in ("ada", "grace", "linus"))
    approvers = Group.objects.create(name="approvers")
    conn = Connection.objects.create(
        name="peer", url=fastmcp_peer.url, routing=Routing.USER, route_user=policy_user
    )
    assert start(conn, caller).rounds.get().assigned_user == policy_user
    to_grace = start(conn, caller, route_user=grace).rounds.get()
    assert (to_grace.assigned_user, to_grace.assigned_group) == (grace, None)
    to_group = start(conn, caller, route_group=approvers)
    assert (to_group.rounds.get().assigned_user, to_group.rounds.get().assigned_group) == (
        None,
        approvers,
    )
    # Starting again keeps whom the call was sent to.
    again = engine.restart(to_grace.call, caller)
    assert again.rounds.get().assigned_user == grace
    with pytest.raises(ValueError):
        start(conn, caller, route_user=grace, route_group=approvers)
