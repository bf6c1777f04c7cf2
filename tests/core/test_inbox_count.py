"""The header's inbox count (core/context_processors.py ``_waiting``), a statement written out
rather than built with the ORM on every page: it counts what the ORM's definition of "waiting
for this person" counts, in every way a round can be routed, on either backend, in one query."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import connection
from django.db.models import Q
from django.test.utils import CaptureQueriesContext

from bench.seed import seed_pending
from mrtrweb.calls.models import Round
from mrtrweb.core import context_processors
from mrtrweb.servers.models import Connection

pytestmark = pytest.mark.django_db

TOOL = {"name": "confirm", "inputSchema": {"type": "object", "properties": {}}}


def _by_the_orm(user: Any) -> int:
    """The rounds waiting for ``user`` as the ORM says it: theirs, and their groups' that
    nobody else claimed; pending and supported."""
    return (
        Round.objects.filter(status=Round.Status.PENDING)
        .exclude(unsupported_reason__gt="")
        .filter(
            Q(assigned_user=user)
            | Q(assigned_group__in=user.groups.all())
            & (Q(claimed_by__isnull=True) | Q(claimed_by=user))
        )
        .count()
    )


def test_the_count_is_the_orm_s_in_every_routing() -> None:
    users = get_user_model()
    pat, other, outsider = (users.objects.create_user(name) for name in ("pat", "sam", "kim"))
    team, elsewhere = Group.objects.create(name="Approvers"), Group.objects.create(name="Ops")
    pat.groups.add(team)
    outsider.groups.add(elsewhere)
    server = Connection.objects.create(
        name="bench", url="http://127.0.0.1:9/mcp", catalog={"tools": [TOOL]}
    )
    seed_pending(11, person=pat, connection=server)
    pending = Round.Status.PENDING
    routings = [
        # (assigned user, group, claimed by, status, unsupported reason): counted?
        (pat, None, None, pending, "", True),
        (pat, team, None, pending, "", True),  # both ways: once
        (None, team, None, pending, "", True),
        (None, team, other, pending, "", False),  # the group's, taken by someone else
        (None, team, pat, pending, "", True),
        (other, team, None, pending, "", True),
        (None, elsewhere, None, pending, "", False),  # a group they are not in
        (pat, None, None, Round.Status.SUBMITTED, "", False),
        (pat, None, None, pending, "a form this app cannot show", False),
        (other, None, None, pending, "", False),
        (None, None, None, pending, "", False),
    ]
    rounds = list(Round.objects.order_by("pk"))
    assert len(rounds) == len(routings)

    def route(row: Round, user: Any, group: Any, claimant: Any, status: str, reason: str) -> None:
        Round.objects.filter(pk=row.pk).update(
            assigned_user=user,
            assigned_group=group,
            claimed_by=claimant,
            status=status,
            unsupported_reason=reason,
        )

    # One round at a time, the others answered: each routing counted alone.
    Round.objects.update(status=Round.Status.SUBMITTED)
    for user, group, claimant, status, reason, counted in routings:
        route(rounds[0], user, group, claimant, status, reason)
        assert context_processors._waiting(pat) == _by_the_orm(pat) == int(counted), (
            user,
            group,
            claimant,
            status,
            reason,
        )
    # All at once.
    for row, routing in zip(rounds, routings, strict=True):
        route(row, *routing[:-1])
    for person in (pat, other, outsider):
        with CaptureQueriesContext(connection) as queries:
            count = context_processors._waiting(person)
        assert count == _by_the_orm(person), person
        assert len(queries) == 1
    assert context_processors._waiting(pat) == sum(counted for *_, counted in routings) == 5
    assert context_processors._waiting(other) == 2  # the two assigned to them
    assert context_processors._waiting(outsider) == 1  # their group's
