"""Who may see a round, answer it and vote on it, as docs/approval-policies.md states it: a
reference in plain Python over plain values, no database.

The pages ask ``calls.access`` and the engine (``engine.quorum``), which answer the same
questions with queries fast enough for every request; the property tests
(``tests/calls/access/test_rules.py``) hold those to this module. Keep it short and literal: a rule
here is a sentence of the docs.

People and groups are ints (their ids); a moment is anything ordered (a datetime).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

PENDING = "pending"


@dataclass(frozen=True)
class Delegation:
    """``person`` is away from ``starts_at`` until ``until``; ``delegate`` stands in.
    ``order`` breaks ties between delegations started at the same moment (the later row)."""

    person: int
    delegate: int
    starts_at: Any
    until: Any
    order: int = 0


@dataclass(frozen=True)
class World:
    """Everyone's standing at one moment."""

    now: Any
    active: frozenset[int]
    admins: frozenset[int] = frozenset()
    members: Mapping[int, frozenset[int]] = field(default_factory=dict)  # group -> people
    delegations: tuple[Delegation, ...] = ()

    def in_group(self, person: int, group: int | None) -> bool:
        return group is not None and person in self.members.get(group, frozenset())


@dataclass(frozen=True)
class Part:
    """A part of a split round: asked of a person or a group, answered by someone or not."""

    user: int | None = None
    group: int | None = None
    answered_by: int | None = None


@dataclass(frozen=True)
class Round:
    """A round as it stands. ``approvers``: under a quorum, the group the policy names (None
    when it names none, or it no longer exists); ``quorum`` says whether a quorum applies."""

    starter: int
    status: str = PENDING
    user: int | None = None
    group: int | None = None
    claimed_by: int | None = None
    delegated_from: int | None = None
    answered_by: int | None = None
    parts: tuple[Part, ...] = ()
    quorum: bool = False
    approvers: int | None = None

    @property
    def split(self) -> bool:
        return bool(self.parts)


# -- delegation ----------------------------------------------------------------------------


def delegate_of(world: World, person: int) -> int:
    """Who stands in for ``person`` now: the delegate of the running delegation that started
    last (if that delegate is active), else ``person`` themselves."""
    running = [
        d for d in world.delegations if d.person == person and d.starts_at <= world.now < d.until
    ]
    if not running:
        return person
    last = max(running, key=lambda d: (d.starts_at, d.order))
    return last.delegate if last.delegate in world.active else person


def park(world: World, starter: int, routed_user: int | None) -> tuple[int | None, int | None]:
    """``(assignee, delegated_from)`` of a new round routed to ``routed_user``: their
    stand-in for them while they are away, unless they started the call themselves or the
    stand-in did (nobody answers their own request for someone else)."""
    if routed_user is None or routed_user == starter:
        return routed_user, None
    stand_in = delegate_of(world, routed_user)
    if stand_in in (routed_user, starter):
        return routed_user, None
    return stand_in, routed_user


def standing_in_for(world: World, person: int, round: Round) -> int | None:
    """Whom ``person`` answers ``round`` for as a stand-in, or None.

    - At parking: the round went to them for someone away (``delegated_from``).
    - Since: a pending round routed to someone (not a group, not split) whom they stand in
      for now, of a call neither that person nor they started, and not itself held as a
      stand-in (no chains)."""
    if round.split or round.user is None:
        return None
    if round.delegated_from is not None:
        return round.delegated_from if round.user == person else None
    if (
        round.status == PENDING
        and round.user != person
        and round.starter not in (round.user, person)
        and delegate_of(world, round.user) == person
    ):
        return round.user
    return None


def reassign(round: Round, *, user: int | None = None, group: int | None = None) -> Round:
    """An admin's reassignment or an escalation: a new route, and no claim or standing in
    left (the person it was delegated from loses it like anyone else)."""
    return replace(round, user=user, group=group, claimed_by=None, delegated_from=None)


# -- seeing and answering --------------------------------------------------------------------


def part_for(world: World, person: int, round: Round) -> int | None:
    """The index of the part of split ``round`` ``person`` sees: the first waiting for them
    among those asked of them (or their groups), else the first of those, else the first
    they answered; None for anyone else."""
    if not round.split or person not in world.active:
        return None
    asked = [
        i for i, p in enumerate(round.parts) if p.user == person or world.in_group(person, p.group)
    ]
    if asked:
        waiting = [i for i in asked if round.parts[i].answered_by is None]
        return (waiting or asked)[0]
    answered = [i for i, p in enumerate(round.parts) if p.answered_by == person]
    return answered[0] if answered else None


def routed_to(world: World, person: int, round: Round) -> bool:
    """Whether ``round`` is routed to ``person``: to them, to a group of theirs and not
    claimed by someone else, handed to their stand-in for them, or theirs to stand in for;
    a split round through a part asked of them (or answered by them)."""
    if round.split:
        return any(
            p.user == person or world.in_group(person, p.group) or p.answered_by == person
            for p in round.parts
        )
    return (
        round.user == person
        or round.delegated_from == person
        or (world.in_group(person, round.group) and round.claimed_by in (None, person))
        or standing_in_for(world, person, round) is not None
    )


def waits_for(world: World, person: int, round: Round) -> bool:
    """Whether the inbox lists ``round`` (pending) as waiting for ``person``: routed to them,
    and a split round only while a part asked of them (or their groups) waits."""
    if round.split:
        return any(
            p.answered_by is None and (p.user == person or world.in_group(person, p.group))
            for p in round.parts
        )
    return routed_to(world, person, round)


def sees_round(world: World, person: int, round: Round) -> bool:
    if person not in world.active:
        return False
    return (
        person in world.admins
        or person == round.starter
        or person == round.answered_by
        or routed_to(world, person, round)
    )


def sees_call(world: World, person: int, starter: int, rounds: tuple[Round, ...]) -> bool:
    """A call is seen by its starter, admins, and through a round of it the person sees for
    a reason other than having started it."""
    if person not in world.active:
        return False
    return (
        person in world.admins
        or person == starter
        or any(person == r.answered_by or routed_to(world, person, r) for r in rounds)
    )


def _answers_as_routed(world: World, person: int, round: Round) -> bool:
    """May answer ``round`` by its routing alone (no admin's power)."""
    if round.user is not None:
        return person in (round.user, round.delegated_from) or (
            standing_in_for(world, person, round) is not None
        )
    if round.group is not None:
        return round.claimed_by in (None, person) and world.in_group(person, round.group)
    return person == round.starter  # rounds parked before routing existed


def may_answer(world: World, person: int, round: Round) -> bool:
    """Whether ``person`` may answer (or abandon) ``round`` (``calls.access.can_answer``)."""
    if person not in world.active:
        return False
    if round.split:
        return part_for(world, person, round) is not None
    return person in world.admins or _answers_as_routed(world, person, round)


# -- quorum ----------------------------------------------------------------------------------


def vote_for(world: World, person: int, round: Round) -> int:
    """Whose vote ``person`` casts on ``round``: the absent person's they stand in for, else
    their own."""
    stood_in = standing_in_for(world, person, round)
    return stood_in if stood_in is not None else person


def may_vote(
    world: World,
    person: int,
    round: Round,
    cast: frozenset[int] = frozenset(),
    voters: frozenset[int] = frozenset(),
) -> bool:
    """Whether ``person`` may propose or vote on quorum ``round`` whose votes so far were cast
    by ``voters`` for the people ``cast`` (:func:`vote_for`).

    Only whom the round is routed to, with an admin no exception; under an approvers group,
    only for one of its members; one vote each, whether they cast it or their stand-in did,
    and nobody casts two.
    """
    if not round.quorum or round.status != PENDING or person not in world.active:
        return False
    if not _answers_as_routed(world, person, round):
        return False
    voter = vote_for(world, person, round)
    if round.approvers is not None and not world.in_group(voter, round.approvers):
        return False
    return voter not in cast and person not in voters
