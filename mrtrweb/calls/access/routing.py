"""Who is asked when a call needs input: a quorum policy's approvers group, else whom the
call names, else the tool's routing, else the connection's; and, for a person who is away,
whoever they delegated to (``policies.Delegation``)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import Group, User
from django.db.models import Q

from mrtrweb.policies.resolve import delegate_of
from mrtrweb.policies.snapshot import PolicySnapshot
from mrtrweb.servers.models import Routing, ToolExposure

from ..models import Call, Round


def route(call: Call) -> tuple[Any, Any]:
    """``(user, group)`` to assign a new round of ``call`` to; exactly one is set."""
    approvers = _approvers(call)
    if approvers is not None:
        return None, approvers
    if call.route_user_id is not None:
        return call.route_user, None
    if call.route_group_id is not None:
        return None, call.route_group
    policy: Any = call.connection
    if call.method == Call.Method.TOOL:
        # Most tools follow the connection's routing; a row's named user or group is read
        # when it is the one to ask.
        # One row per tool at most (its constraint): no ORDER BY for first() to build.
        override = next(
            iter(
                ToolExposure.objects.filter(
                    ~Q(routing=""), connection_id=call.connection_id, tool_name=call.target
                )[:1]
            ),
            None,
        )
        if override is not None:
            policy = override
    if policy.routing == Routing.USER and policy.route_user is not None:
        return policy.route_user, None
    if policy.routing == Routing.GROUP and policy.route_group is not None:
        return None, policy.route_group
    # The default, and the fallback when a named user or group was deleted.
    return call.started_by, None


def _approvers(call: Call) -> Group | None:
    """The approvers group of a quorum policy (engine.quorum), None without one (or when it
    was deleted: the round's own routing then asks)."""
    policy = PolicySnapshot.from_json(call.policy)
    if not (policy.quorum and policy.approvers_group):
        return None
    return Group.objects.filter(name=policy.approvers_group).first()


def stand_in(call: Call, user: User) -> tuple[Any, Any]:
    """``(whom to ask, for whom)`` for a round of ``call`` routed to ``user``: their delegate
    and them while a delegation of theirs runs, else ``(user, None)``. Groups are not
    delegated (the other members are there), nor a round of a call its own person started
    (they are there: they just started it), nor one of a call the delegate started (nobody
    answers their own request for someone else)."""
    if user is None or user.pk == call.started_by_id:
        return user, None
    delegate = delegate_of(user)
    if delegate.pk in (user.pk, call.started_by_id):
        return user, None
    return delegate, user


def standing_in_now(round: Any) -> Any:
    """Who stands in now for the person ``round`` is routed to, or None.

    Only for a pending round routed to one person (not a group's, not split), of a call that
    person did not start (their own Away never applies to their own calls) nor the stand-in
    (nobody answers their own request for someone else), and not held by them as someone
    else's stand-in (a delegate's own Away does not pass it on again)."""
    if (
        round.assigned_user_id is None
        or round.split
        or round.delegated_from_id is not None
        or round.status != Round.Status.PENDING
        or round.assigned_user_id == round.call.started_by_id
    ):
        return None
    delegate = delegate_of(round.assigned_user)
    if delegate.pk in (round.assigned_user_id, round.call.started_by_id):
        return None
    return delegate


def answering_for(round: Any, user: User) -> Any:
    """The person ``user`` answers ``round`` for as their stand-in, or None (their own round,
    a group's, or an admin's answer): the round went to ``user`` for someone away when it was
    parked (``delegated_from``), or ``user`` stands in now for the person it is routed to
    (:func:`standing_in_now`)."""
    if round.assigned_user_id is None or round.split:
        return None
    if round.delegated_from_id is not None:
        return round.delegated_from if round.assigned_user_id == user.pk else None
    if round.assigned_user_id == user.pk:
        return None
    stand_in = standing_in_now(round)
    return round.assigned_user if stand_in is not None and stand_in.pk == user.pk else None


def answers_as_routed(user: User, round: Round) -> bool:
    """Whether ``user`` may answer ``round`` (not split) by its routing alone, an admin's
    power left aside: a quorum's votes are only theirs (``engine.quorum``)."""
    if round.assigned_user_id is not None:
        return user.pk in (round.assigned_user_id, round.delegated_from_id) or (
            answering_for(round, user) is not None
        )
    if round.assigned_group_id is not None:
        return (round.claimed_by_id in (None, user.pk)) and user.groups.filter(
            pk=round.assigned_group_id
        ).exists()
    # Rounds parked before routing existed belong to the caller.
    return round.call.started_by_id == user.pk
