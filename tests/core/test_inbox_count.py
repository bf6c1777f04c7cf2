"""The header's inbox count (core/context_processors.py ``_waiting``), one query of one capped
branch per way of being routed (``calls.access.waiting_ways``): it counts what the inbox lists
as waiting for this person (``calls.access.waiting_for``, less the forms this app cannot
show), in every way a round can be routed (their groups, delegations, split rounds' parts), on
either backend, in one query; and the two rules find the same rounds."""

from __future__ import annotations

import itertools
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import connection
from django.db.models import Q
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from bench.seed import seed_pending
from mrtrweb.calls.access import waiting_ways
from mrtrweb.calls.models import Round, RoundPart
from mrtrweb.core import context_processors
from mrtrweb.inbox.views import pending_rounds
from mrtrweb.policies.models import Delegation
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


def _listed(user: Any) -> int:
    """What the inbox lists as waiting for ``user``, less the forms this app cannot show."""
    return pending_rounds(user).exclude(unsupported_reason__gt="").count()


def test_the_count_is_the_inbox_s_with_delegations_and_split_rounds() -> None:
    users = get_user_model()
    pat, sam, kim, lee = (users.objects.create_user(name) for name in ("pat", "sam", "kim", "lee"))
    team = Group.objects.create(name="Approvers")
    pat.groups.add(team)
    server = Connection.objects.create(
        name="bench", url="http://127.0.0.1:9/mcp", catalog={"tools": [TOOL]}
    )
    seed_pending(9, person=lee, connection=server)
    rounds = list(Round.objects.order_by("pk"))
    now = timezone.now()
    hour = timedelta(hours=1)

    def route(row: Round, **fields: Any) -> None:
        Round.objects.filter(pk=row.pk).update(**{"assigned_user": None, **fields})

    # Pat stands in for sam now; kim's delegation to pat was overtaken by a later one to lee;
    # a delegation to pat that ended, and one not begun, count for nothing.
    Delegation.objects.create(person=sam, delegate=pat, starts_at=now - hour, until=now + hour)
    Delegation.objects.create(person=kim, delegate=pat, starts_at=now - 2 * hour, until=now + hour)
    Delegation.objects.create(person=kim, delegate=lee, starts_at=now - hour, until=now + hour)
    Delegation.objects.create(person=lee, delegate=pat, starts_at=now - 2 * hour, until=now - hour)
    Delegation.objects.create(person=lee, delegate=pat, starts_at=now + hour, until=now + 2 * hour)
    route(rounds[0], assigned_user=sam)  # sam's, and pat stands in: waits for both
    route(rounds[1], assigned_user=kim)  # kim's delegate is lee now, not pat
    route(rounds[2], assigned_user=lee)  # lee's delegations to pat are not running
    # Handed from pat to kim: both; not kim's delegate lee (a stand-in's Away is no chain).
    route(rounds[3], assigned_user=kim, delegated_from=pat)
    # Split rounds: through their pending parts only, whoever the round itself names.
    pending, answered = RoundPart.Status.PENDING, RoundPart.Status.ANSWERED
    parts = [
        (rounds[4], [(pat, None, pending), (kim, None, pending)]),  # pat's part waits
        (rounds[5], [(None, team, pending)]),  # pat's group's part waits
        (rounds[6], [(pat, None, answered), (kim, None, pending)]),  # pat has answered
        (rounds[7], [(pat, None, pending), (None, team, pending)]),  # two parts: once
    ]
    for row, its_parts in parts:
        route(row, split=True, assigned_user=pat)  # the round's own assignee does not count
        for user, group, status in its_parts:
            RoundPart.objects.create(
                round=row, keys=["k"], assigned_user=user, assigned_group=group, status=status
            )
    route(rounds[8], assigned_user=pat, delegated_from=sam)  # sam away, pat stands in: once
    # kim: their two rounds and two split rounds; lee: their own, and not kim's although lee
    # stands in for kim: lee started its call, and nobody answers their own request for
    # someone else.
    expected = {pat: 6, sam: 2, kim: 4, lee: 1}
    for person, count in expected.items():
        with CaptureQueriesContext(connection) as queries:
            waiting = context_processors._waiting(person)
        assert waiting == _listed(person) == count, person.username
        assert len(queries) == 1
    # The delegate deactivated: sam's rounds wait for sam alone again.
    users.objects.filter(pk=pat.pk).update(is_active=False)
    pat.refresh_from_db()
    assert context_processors._waiting(pat) == _listed(pat) == 5


def test_the_ways_find_the_rounds_waiting_for_finds_for_everyone() -> None:
    """``waiting_ways`` (the count's branches) and ``waiting_for`` (the inbox's list) give the
    same rounds, not only as many, for every person over every combination of routings: a
    term added to, or changed in, one of them and not the other fails here."""
    users = get_user_model()
    pat, sam, kim, lee = (users.objects.create_user(name) for name in ("pat", "sam", "kim", "lee"))
    team, ops = Group.objects.create(name="Approvers"), Group.objects.create(name="Ops")
    pat.groups.add(team)
    kim.groups.add(team, ops)
    now, hour = timezone.now(), timedelta(hours=1)
    # Pat stands in for sam; lee for kim; kim's own delegation to pat has ended.
    Delegation.objects.create(person=sam, delegate=pat, starts_at=now - hour, until=now + hour)
    Delegation.objects.create(person=kim, delegate=lee, starts_at=now - hour, until=now + hour)
    Delegation.objects.create(person=kim, delegate=pat, starts_at=now - 3 * hour, until=now - hour)
    people, groups = (None, pat, sam, kim, lee), (None, team, ops)
    whole = [
        (user, group, claimant, delegated_from)
        for user, group, claimant, delegated_from in itertools.product(
            people, groups, (None, pat, kim), (None, pat, kim)
        )
        if (user is None) != (group is None)
    ]
    pending, answered = RoundPart.Status.PENDING, RoundPart.Status.ANSWERED
    split = [
        [(user, group, status)]
        for user, group, status in itertools.product(people, groups, (pending, answered))
        if (user is None) != (group is None)
    ]
    split += [
        [(pat, None, answered), (None, team, pending)],
        [(kim, None, pending), (pat, None, pending)],
    ]
    server = Connection.objects.create(
        name="bench", url="http://127.0.0.1:9/mcp", catalog={"tools": [TOOL]}
    )
    # Calls started by lee: sam's rounds may go to pat, and kim's to lee only as their own.
    seed_pending(len(whole) + len(split) + 1, person=lee, connection=server)
    rounds = list(Round.objects.order_by("pk"))
    for row, (user, group, claimant, delegated_from) in zip(rounds, whole, strict=False):
        Round.objects.filter(pk=row.pk).update(
            assigned_user=user, assigned_group=group, claimed_by=claimant,
            delegated_from=delegated_from,
        )  # fmt: skip
    for row, its_parts in zip(rounds[len(whole) :], split, strict=False):
        Round.objects.filter(pk=row.pk).update(split=True, assigned_user=pat)
        for user, group, status in its_parts:
            RoundPart.objects.create(
                round=row, keys=["k"], assigned_user=user, assigned_group=group, status=status
            )
    Round.objects.filter(pk=rounds[-1].pk).update(status=Round.Status.SUBMITTED)
    shown = Q(status=Round.Status.PENDING)
    found = 0
    for person in (pat, sam, kim, lee):
        by_ways: set[int] = set()
        for keys in waiting_ways(person, shown):
            by_ways.update(key for row in keys for key in row.values())
        listed = set(pending_rounds(person).values_list("pk", flat=True))
        assert by_ways == listed, person.username
        assert context_processors._waiting(person) == len(listed), person.username
        found += len(listed)
    assert found > 20  # the routings reach everyone many ways, not none
