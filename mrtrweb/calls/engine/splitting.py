"""Split rounds: one round's keyed questions answered by different people.

When a call's policy has ``split_routes`` (``{"<inputRequests key>": {"user": name} |
{"group": name}}``) and a parked round asks several keyed requests, each key a route names
becomes a part of its own (:class:`~mrtrweb.calls.models.RoundPart`), routed as the route
says; the keys no route names stay together as one more part, routed as the round itself.
Each person sees and answers only their part.

The round's answers are sent once, when its last part is answered, with every answer under
its key. A part that is declined (or cancelled) is handled as ``split_decline`` says:
``decline-round`` declines the whole round at once (every key sent as that refusal, the
other parts closed), ``send-with-others`` waits for the other parts and sends the refused
keys as refused.

Answering a part locks the round's row first (``SELECT ... FOR UPDATE``; SQLite's writes
are serialised anyway): two people answering the last two parts at the same moment, in two
processes, are taken one after the other, so exactly one of them sees every part answered
and moves the round ``pending -> submitted``, which is itself a guarded transition.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, User
from django.utils.translation import gettext

from mrtrweb.policies.snapshot import PolicySnapshot

from ..models import Call, Round, RoundPart
from .trail import record
from .transitions import AlreadyAnswered, NotAnswerable, transition_part

__all__ = ["DECLINE_ROUND", "SEND_WITH_OTHERS", "answer_part", "split"]

DECLINE_ROUND = "decline-round"
SEND_WITH_OTHERS = "send-with-others"
REFUSALS = ("decline", "cancel")


def _assignee(route: Mapping[str, Any]) -> tuple[Any, Any]:
    """``(user, group)`` a route names, ``(None, None)`` when it names nobody who exists."""
    if not isinstance(route, Mapping):
        return None, None
    name = route.get("user")
    if isinstance(name, str) and name:
        user = get_user_model().objects.filter(username=name, is_active=True).first()
        return user, None
    name = route.get("group")
    if isinstance(name, str) and name:
        return None, Group.objects.filter(name=name).first()
    return None, None


def split(round: Round, call: Call) -> None:
    """Split a just-parked ``round`` into parts when the call's policy routes its keys
    (called by ``parking.park`` in its transaction; does nothing for any other round)."""
    policy = PolicySnapshot.from_json(call.policy)
    keys = list(round.input_requests or {})
    # With a quorum too (a policy validation refuses), the quorum has the round: not split.
    if not policy.split or policy.quorum or round.unsupported_reason or len(keys) < 2:
        return
    parts: list[RoundPart] = []
    unrouted: list[str] = []
    for key in keys:
        route = policy.split_routes.get(key)
        user, group = _assignee(route) if route is not None else (None, None)
        if user is None and group is None:
            # Named by no route, or by one whose person or group is gone: the round's own.
            unrouted.append(key)
            continue
        parts.append(
            RoundPart(round=round, keys=[key], key=key, assigned_user=user, assigned_group=group)
        )
    if not parts:
        return
    if unrouted:
        parts.append(
            RoundPart(
                round=round,
                keys=unrouted,
                key="",
                assigned_user=round.assigned_user,
                assigned_group=round.assigned_group,
            )
        )
    if len(parts) < 2:
        return  # every key to one person: nothing to split
    RoundPart.objects.bulk_create(parts)
    Round.objects.filter(pk=round.pk).update(split=True)
    round.split = True
    record(
        call,
        "round_split",
        round=round,
        decline=policy.split_decline,
        parts=[
            {
                "key": part.key,
                "keys": part.keys,
                **({"user": part.assigned_user.get_username()} if part.assigned_user else {}),
                **({"group": part.assigned_group.name} if part.assigned_group else {}),
            }
            for part in parts
        ],
    )


def _refusal(answers: Mapping[str, Mapping[str, Any]]) -> str:
    """The refusal a part's answers carry ("decline" or "cancel"), "" if it has none."""
    actions = [str(a.get("action", "")) for a in answers.values()]
    for action in REFUSALS:
        if action in actions:
            return action
    return ""


def answer_part(
    round: Round,
    responses: Mapping[str, Mapping[str, Any]],
    user: User,
    now: dt.datetime,
    *,
    comment: str = "",
) -> dict[str, dict[str, Any]] | None:
    """Store ``user``'s answers to one part of split ``round`` (``responses`` holds exactly
    that part's keys), inside the caller's transaction (``answering.answer``). ``comment``,
    their note for the requester, is kept with the part's entry in the audit trail (only the
    requester, admins and its author read it: other parts' people never see it).

    Returns the round's whole ``inputResponses`` when the round is now to be sent (every
    part answered, or a part declined under ``decline-round``): the caller then moves the
    round ``pending -> submitted`` as for any round. None while other parts still wait.
    Raises :class:`AlreadyAnswered` when the part (or the round) was answered first.
    """
    # Taken one after the other: see the module's docstring.
    # The round's row only (``of``): its call is not locked with it.
    locked = Round.objects.select_for_update(of=("self",)).select_related("call").get(pk=round.pk)
    if locked.status != Round.Status.PENDING:
        raise AlreadyAnswered(
            gettext("Round %(index)d was already answered.") % {"index": locked.index}
        )
    wanted = set(responses)
    parts = list(locked.parts.order_by("id"))
    call = locked.call
    if wanted == set(locked.input_requests) and all(
        str(a.get("action")) in REFUSALS for a in responses.values()
    ):
        # The whole round refused at once (its call cancelled): no part is asked any more.
        for other in parts:
            transition_part(other, RoundPart.Status.PENDING, RoundPart.Status.CLOSED)
        return {key: dict(responses[key]) for key in locked.input_requests}
    part = next((p for p in parts if set(p.keys) == wanted), None)
    if part is None:
        raise NotAnswerable(gettext("Answer exactly the questions of one part of this round."))
    refusal = _refusal(responses)
    answers = {key: dict(responses[key]) for key in part.keys}
    if not transition_part(
        part,
        RoundPart.Status.PENDING,
        RoundPart.Status.DECLINED if refusal else RoundPart.Status.ANSWERED,
        answers=answers,
        answered_by=user,
        answered_at=now,
    ):
        raise AlreadyAnswered(gettext("This part of the round was already answered."))
    policy = PolicySnapshot.from_json(call.policy)
    said: dict[str, Any] = {
        **({"declined": refusal} if refusal else {}),
        **({"comment": comment} if comment else {}),
    }
    record(
        call,
        "part_answered",
        round=locked,
        actor=user,
        part=part.key,
        keys=part.keys,
        answers=answers,
        **said,
    )
    if refusal and policy.split_decline != SEND_WITH_OTHERS:
        # decline-round: the whole round is refused now; the other parts are not asked.
        for other in parts:
            if other.pk != part.pk:
                transition_part(other, RoundPart.Status.PENDING, RoundPart.Status.CLOSED)
        record(call, "split_declined", round=locked, actor=user, part=part.key, action=refusal)
        return {key: {"action": refusal} for key in locked.input_requests}
    statuses = dict(locked.parts.values_list("pk", "status"))
    if any(status == RoundPart.Status.PENDING for status in statuses.values()):
        return None
    given: dict[str, dict[str, Any]] = {}
    for done in locked.parts.all():
        given.update(done.answers or {})
    # Every answer under its key, in the order the server asked them.
    return {key: given[key] for key in locked.input_requests if key in given}
