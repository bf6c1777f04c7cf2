"""The pages' access rules and the quorum's vote path, held to the reference
(``calls.access.rules``).

Hypothesis draws a world: a few people (some inactive, one perhaps an admin), two groups with
random members, delegations with dates (running, over, to come, overtaken by a later one,
to someone inactive), calls started by anyone (some restarted from another), their rounds
routed to a person, a group or nobody, claimed, handed on from someone away, answered or
not, split into parts, or under a quorum with votes already cast (some by stand-ins); then
admins' reassignments through the engine. The same world is stored in the database and
given to the reference, and every person is asked about every round and call through the
real paths: ``visible_round``, ``visible_rounds``, ``can_answer``, ``part_for``,
``visible_call``, ``sees_call``, ``visible_calls``, ``restarts_of``, the inbox's count, the
socket's check, the API's round list, ``why_cannot_vote`` and ``engine.vote`` itself.

``ATTEMPTS`` counts the examples each property ran (all must hold: a failure fails the test).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.db import transaction
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mrtrweb.calls import engine
from mrtrweb.calls.access import (
    can_answer,
    part_for,
    restarts_of,
    rules,
    sees_call,
    visible_call,
    visible_calls,
    visible_round,
    visible_rounds,
)
from mrtrweb.calls.models import Call, Round, RoundPart, Vote
from mrtrweb.core.context_processors import _waiting
from mrtrweb.live.checks import sees_calls_now
from mrtrweb.people.roles import ADMINS
from mrtrweb.policies.models import Delegation
from mrtrweb.policies.snapshot import PolicySnapshot
from mrtrweb.servers.models import Connection
from tests.api.support import api_for
from tests.factories import CallFactory, RoundFactory
from tests.support.examples import examples
from tests.support.factories import make_user

pytestmark = pytest.mark.django_db

PEOPLE = 5
GROUPS = 2
MISSING_GROUP = GROUPS  # a quorum's approvers group that no longer exists
EXAMPLES = examples(50)
ATTEMPTS: Counter[str] = Counter()

person = st.integers(0, PEOPLE - 1)
maybe_person = st.none() | person
group = st.integers(0, GROUPS - 1)


@dataclass
class DrawnRound:
    call: int
    status: str
    user: int | None
    group: int | None
    claimed_by: int | None
    delegated_from: int | None
    answered_by: int | None
    parts: list[tuple[int | None, int | None, int | None]]  # (user, group, answered_by)
    votes: list[tuple[int, int | None]] = field(default_factory=list)  # (voter, for whom)


@dataclass
class Drawn:
    active: list[bool]
    admin: int | None
    members: list[set[int]]
    delegations: list[tuple[int, int, int, int]]  # person, delegate, start h, length h
    calls: list[
        tuple[int, int | None, bool, int | None]
    ]  # starter, restarted from, quorum, approvers
    rounds: list[DrawnRound]
    reassignments: list[tuple[int, int | None, int | None]]  # round, user, group


@st.composite
def rounds_of(draw: Any, calls: list[tuple[int, int | None, bool, int | None]]) -> DrawnRound:
    call = draw(st.integers(0, len(calls) - 1))
    quorum = calls[call][2]
    status = draw(st.sampled_from(["pending", "pending", "delivered", "cancelled"]))
    parts: list[tuple[int | None, int | None, int | None]] = []
    if not quorum and draw(st.booleans()):
        for _ in range(draw(st.integers(2, 3))):
            asked_user = draw(maybe_person)
            asked_group = draw(st.none() | group) if asked_user is None else None
            parts.append((asked_user, asked_group, draw(st.none() | person)))
    route = draw(st.sampled_from(["user", "user", "group", "none"]))
    user = draw(person) if route == "user" else None
    routed_group = draw(group) if route == "group" else None
    delegated_from = draw(st.none() | person) if user is not None else None
    if delegated_from == user:
        delegated_from = None
    votes: list[tuple[int, int | None]] = []
    if quorum and status == "pending":
        voters = draw(st.lists(person, max_size=3, unique=True))
        votes = [(v, draw(st.none() | person)) for v in voters]
        votes = [(v, f if f != v else None) for v, f in votes]
    return DrawnRound(
        call=call,
        status=status,
        user=user,
        group=routed_group,
        claimed_by=draw(maybe_person) if routed_group is not None else None,
        delegated_from=delegated_from,
        answered_by=draw(maybe_person) if status != "pending" else None,
        parts=parts,
        votes=votes,
    )


@st.composite
def worlds(draw: Any) -> Drawn:
    active = draw(
        st.lists(st.booleans(), min_size=PEOPLE, max_size=PEOPLE).map(
            lambda flags: [True, True, *flags[2:]]  # two at least, so someone is around
        )
    )
    members = [draw(st.sets(person, max_size=3)) for _ in range(GROUPS)]
    delegations = draw(
        st.lists(
            # Never to oneself (the Away page refuses it): the delegate is another person.
            st.tuples(
                person, st.integers(1, PEOPLE - 1), st.integers(-3, 1), st.integers(1, 4)
            ).map(lambda d: (d[0], (d[0] + d[1]) % PEOPLE, d[2], d[3])),
            max_size=4,
        )
    )
    calls: list[tuple[int, int | None, bool, int | None]] = []
    for n in range(draw(st.integers(1, 3))):
        restarted = draw(st.none() | st.integers(0, n - 1)) if n else None
        quorum = draw(st.booleans())
        approvers = draw(st.none() | st.integers(0, MISSING_GROUP)) if quorum else None
        calls.append((draw(person), restarted, quorum, approvers))
    rounds = draw(st.lists(rounds_of(calls), min_size=1, max_size=4))
    reassignments = draw(
        st.lists(
            st.tuples(
                st.integers(0, len(rounds) - 1),
                st.none() | person,
                group,
            ),
            max_size=2,
        )
    )
    return Drawn(
        active=active,
        admin=draw(st.none() | person),
        members=members,
        delegations=delegations,
        calls=calls,
        rounds=rounds,
        reassignments=reassignments,
    )


# -- the same world, stored and as the reference sees it --------------------------------------


@dataclass
class Stored:
    users: list[Any]
    groups: list[Group]
    calls: list[Call]
    rounds: list[Round]
    world: rules.World
    reference: list[rules.Round]
    votes: list[tuple[frozenset[int], frozenset[int]]]  # per round: for whom, and by whom


def store(drawn: Drawn) -> Stored:
    now = timezone.now()
    users = [make_user(f"p{n}") for n in range(PEOPLE)]
    if drawn.admin is not None:
        users[drawn.admin].groups.add(Group.objects.get(name=ADMINS))
    groups = [Group.objects.create(name=f"team{n}") for n in range(GROUPS)]
    for g, people in enumerate(drawn.members):
        groups[g].user_set.add(*(users[p] for p in people))
    delegations = []
    for who, delegate, start, hours in drawn.delegations:
        starts_at = now + timedelta(hours=start)
        until = starts_at + timedelta(hours=hours)
        row = Delegation.objects.create(
            person=users[who], delegate=users[delegate], starts_at=starts_at, until=until
        )
        delegations.append(rules.Delegation(who, delegate, starts_at, until, row.pk))
    for n, flag in enumerate(drawn.active):
        if not flag:
            users[n].is_active = False
            users[n].save(update_fields=["is_active"])
    conn = Connection.objects.create(name="c", url="http://127.0.0.1:9/mcp")
    calls: list[Call] = []
    for starter, restarted, quorum, approvers in drawn.calls:
        policy = (
            PolicySnapshot(
                approvals_required=9,
                rejections_to_decline=9,
                allow_self_approval=True,
                approvers_group="" if approvers is None else f"team{approvers}",
            ).to_json()
            if quorum
            else {}
        )
        calls.append(
            CallFactory(
                connection=conn,
                started_by=users[starter],
                policy=policy,
                restarted_from=calls[restarted] if restarted is not None else None,
            )
        )
    world = rules.World(
        now=now,
        active=frozenset(n for n, flag in enumerate(drawn.active) if flag),
        admins=frozenset({drawn.admin}) if drawn.admin is not None else frozenset(),
        members={g: frozenset(p) for g, p in enumerate(drawn.members)},
        delegations=tuple(delegations),
    )
    u = lambda n: users[n] if n is not None else None  # noqa: E731
    g = lambda n: groups[n] if n is not None else None  # noqa: E731
    stored: list[Round] = []
    reference: list[rules.Round] = []
    votes: list[tuple[frozenset[int], frozenset[int]]] = []
    index: Counter[int] = Counter()
    outsider = None  # the proposer: nobody drawn, so "proposer" never hides eligibility
    for r in drawn.rounds:
        index[r.call] += 1
        starter, _, quorum, approvers = drawn.calls[r.call]
        row = RoundFactory(
            call=calls[r.call],
            index=index[r.call],
            input_requests={"k0": {}, "k1": {}, "k2": {}},
            status=r.status,
            assigned_user=u(r.user),
            assigned_group=g(r.group),
            claimed_by=u(r.claimed_by),
            delegated_from=u(r.delegated_from),
            answered_by=u(r.answered_by),
            split=bool(r.parts),
            proposal={"k0": {"action": "accept"}} if quorum else None,
            proposed_by=outsider,
            proposed_at=now if quorum else None,
        )
        for k, (part_user, part_group, answerer) in enumerate(r.parts):
            RoundPart.objects.create(
                round=row,
                keys=[f"k{k}"],
                key=f"k{k}",
                assigned_user=u(part_user),
                assigned_group=g(part_group),
                answered_by=u(answerer),
                status=RoundPart.Status.PENDING if answerer is None else RoundPart.Status.ANSWERED,
            )
        for voter, for_whom in r.votes:
            Vote.objects.create(
                round=row, voter=users[voter], for_user=u(for_whom), verdict="reject"
            )
        votes.append(
            (
                frozenset(f if f is not None else v for v, f in r.votes),
                frozenset(v for v, _ in r.votes),
            )
        )
        stored.append(row)
        reference.append(
            rules.Round(
                starter=starter,
                status=r.status,
                user=r.user,
                group=r.group,
                claimed_by=r.claimed_by,
                delegated_from=r.delegated_from,
                answered_by=r.answered_by,
                parts=tuple(rules.Part(pu, pg, pa) for pu, pg, pa in r.parts),
                quorum=quorum,
                approvers=approvers if approvers is not None and approvers < GROUPS else None,
            )
        )
    # An admin's reassignments, through the engine, of rounds that still wait (not split).
    for n, to_user, to_group in drawn.reassignments:
        if reference[n].status != rules.PENDING or reference[n].split:
            continue
        target = {"user": users[to_user]} if to_user is not None else {"group": groups[to_group]}
        engine.reassign(stored[n], None, **target)
        reference[n] = rules.reassign(
            reference[n],
            user=to_user,
            group=None if to_user is not None else to_group,
        )
    fresh = {row.pk: row for row in Round.objects.select_related("call").filter(call__in=calls)}
    return Stored(
        users=users,
        groups=groups,
        calls=calls,
        rounds=[fresh[row.pk] for row in stored],
        world=world,
        reference=reference,
        votes=votes,
    )


def fresh_user(stored: Stored, n: int) -> Any:
    """Person ``n`` read again: their permissions and groups as a request would find them."""
    return type(stored.users[n]).objects.get(pk=stored.users[n].pk)


def in_a_savepoint(check: Any) -> Any:
    """Run each example inside a savepoint rolled back after it: every world starts empty."""

    def run(drawn: Drawn) -> None:
        with transaction.atomic():
            check(drawn)
            transaction.set_rollback(True)

    return run


SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    database=None,
)


# -- the properties -----------------------------------------------------------------------------


@SETTINGS
@given(worlds())
def test_who_sees_and_answers_each_round_is_the_references(drawn: Drawn) -> None:
    @in_a_savepoint
    def check(drawn: Drawn) -> None:
        s = store(drawn)
        for n in range(PEOPLE):
            user = fresh_user(s, n)
            seen = set(visible_rounds(user).values_list("pk", flat=True))
            for row, ref in zip(s.rounds, s.reference, strict=True):
                expected = rules.sees_round(s.world, n, ref)
                where = (n, ref, drawn)
                assert (visible_round(user, row.pk) is not None) == expected, where
                assert (row.pk in seen) == expected, where
                assert can_answer(user, row) == rules.may_answer(s.world, n, ref), where
                part = part_for(user, row)
                parts = list(row.parts.order_by("id").values_list("pk", flat=True))
                index = parts.index(part.pk) if part is not None else None
                assert index == rules.part_for(s.world, n, ref), where
                ATTEMPTS["round checks"] += 1
                ATTEMPTS["rounds seen"] += expected
            if user.is_active:  # the header's count of the rounds that wait for them
                waiting = sum(
                    rules.waits_for(s.world, n, ref)
                    for ref in s.reference
                    if ref.status == rules.PENDING
                )
                assert _waiting(user) == waiting, (n, drawn)
        ATTEMPTS["rounds"] += 1

    check(drawn)


@SETTINGS
@given(worlds())
def test_who_sees_each_call_and_its_restarts_is_the_references(drawn: Drawn) -> None:
    @in_a_savepoint
    def check(drawn: Drawn) -> None:
        s = store(drawn)
        by_call: dict[int, list[rules.Round]] = {c.pk: [] for c in s.calls}
        for row, ref in zip(s.rounds, s.reference, strict=True):
            by_call[row.call_id].append(ref)
        for n in range(PEOPLE):
            user = fresh_user(s, n)
            listed = set(visible_calls(user).values_list("pk", flat=True))
            expected = {
                c.pk
                for c, (starter, *_) in zip(s.calls, drawn.calls, strict=True)
                if rules.sees_call(s.world, n, starter, tuple(by_call[c.pk]))
            }
            assert listed == expected, (n, drawn)
            for c in s.calls:
                where = (n, c.pk, drawn)
                assert (visible_call(user, c.pk) is not None) == (c.pk in expected), where
                assert sees_call(user, c) == (c.pk in expected), where
                assert {r.pk for r in restarts_of(user, c)} == {
                    r.pk for r in s.calls if r.restarted_from_id == c.pk and r.pk in expected
                }, where
            # A call's live socket asks the same.
            asked = [(user, c.pk) for c in s.calls]
            assert sees_calls_now(asked) == [c.pk in expected for c in s.calls], (n, drawn)
        ATTEMPTS["calls"] += 1

    check(drawn)


@SETTINGS
@given(worlds(), person, st.sampled_from(["pending", "delivered"]))
def test_the_apis_round_list_is_the_references(drawn: Drawn, n: int, status: str) -> None:
    @in_a_savepoint
    def check(drawn: Drawn) -> None:
        s = store(drawn)
        if not drawn.active[n]:
            return
        listed = api_for(s.users[n]).get("/rounds", status=status, limit=100)
        assert listed.status_code == 200
        ids = {r["id"] for r in listed.json()["rounds"]}
        wanted = rules.waits_for if status == "pending" else rules.routed_to
        expected = {
            row.pk
            for row, ref in zip(s.rounds, s.reference, strict=True)
            if ref.status == status and wanted(s.world, n, ref)
        }
        assert ids == expected, (n, drawn)
        ATTEMPTS["api"] += 1

    check(drawn)


@SETTINGS
@given(worlds())
def test_who_may_vote_on_a_quorum_round_is_the_references(drawn: Drawn) -> None:
    @in_a_savepoint
    def check(drawn: Drawn) -> None:
        s = store(drawn)
        for row, ref, (cast, voters) in zip(s.rounds, s.reference, s.votes, strict=True):
            if not ref.quorum:
                continue
            for n in range(PEOPLE):
                user = fresh_user(s, n)
                may = rules.may_vote(s.world, n, ref, cast, voters)
                assert (engine.why_cannot_vote(row, user) == "") == may, (n, ref, cast, drawn)
                # The engine's own vote path, inside a savepoint of its own.
                try:
                    with transaction.atomic():
                        engine.vote(row, user, "reject")
                        voted = True
                        transaction.set_rollback(True)
                except engine.EngineError:
                    voted = False
                assert voted == may, (n, ref, cast, drawn)
                ATTEMPTS["vote checks"] += 1
                ATTEMPTS["votes allowed"] += may
        ATTEMPTS["votes"] += 1

    check(drawn)


# -- the reference against the docs' sentences (no database: many more examples) -------------


@settings(max_examples=examples(300), deadline=None, database=None)
@given(worlds(), person)
def test_the_reference_says_what_the_docs_say(drawn: Drawn, n: int) -> None:
    world = rules.World(
        now=0,
        active=frozenset(p for p, flag in enumerate(drawn.active) if flag),
        admins=frozenset({drawn.admin}) if drawn.admin is not None else frozenset(),
        members={g: frozenset(p) for g, p in enumerate(drawn.members)},
        delegations=tuple(
            rules.Delegation(who, d, start, start + hours, order)
            for order, (who, d, start, hours) in enumerate(drawn.delegations)
        ),
    )
    for r in drawn.rounds:
        starter = drawn.calls[r.call][0]
        ref = rules.Round(
            starter=starter, status=r.status, user=r.user, group=r.group,
            claimed_by=r.claimed_by, delegated_from=r.delegated_from,
        )  # fmt: skip
        stood_in = rules.standing_in_for(world, n, ref)
        if stood_in is not None and ref.delegated_from is None:
            # Only pending rounds routed to the absent person, of calls they did not start.
            assert ref.status == rules.PENDING and ref.user == stood_in != starter
        # No chains: whoever stands in for a stand-in gets nothing of what it holds.
        if ref.delegated_from is not None and n not in (ref.user, ref.delegated_from):
            assert stood_in is None
        # Nobody answers their own request as someone else's stand-in.
        if n == starter:
            assert stood_in is None or ref.delegated_from is not None
        # A reassignment ends standing in: the person it was handed on from loses it like
        # anyone else (it reaches them again only by standing in for the new assignee now).
        moved = rules.reassign(ref, user=(n + 1) % PEOPLE)
        gone = ref.delegated_from
        if gone is not None and gone != moved.user:
            assert moved.delegated_from is None
            assert rules.routed_to(world, gone, moved) == (
                rules.standing_in_for(world, gone, moved) is not None
            )
        # Under a quorum, nobody outside the approvers (an admin no more than anyone) votes
        # for themselves; and nobody votes twice for the same person.
        quorum = rules.Round(starter=starter, user=r.user, group=r.group, quorum=True, approvers=0)
        whose = rules.vote_for(world, n, quorum)
        if whose == n and n not in world.members[0]:
            assert not rules.may_vote(world, n, quorum)
        assert not rules.may_vote(world, n, quorum, frozenset({whose}))
    ATTEMPTS["reference"] += 1


def test_every_property_ran_its_examples() -> None:
    """Run last in this module: each property made its attempts, and all of them held (a
    failing example fails its own test). The counts are what the closing note reports."""
    if not ATTEMPTS:
        pytest.skip("run with the rest of the module")
    for name in ("rounds", "calls", "api", "votes"):
        assert ATTEMPTS[name] >= EXAMPLES // 2, (name, ATTEMPTS)
    print("property attempts that held:", dict(sorted(ATTEMPTS.items())))  # shown with -s
