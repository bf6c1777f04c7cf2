"""The approval policies' side of a round, as people read it:

- ``proposal_view``, ``votes_of``, ``comments_of``: a quorum round's proposal by its labels,
  its votes, and the comments answerers left for the requester (never sent to the server);
- ``policy_states``: each approval policy's state of rounds as short labels ("approvals 1
  of 2"), for the inbox, the admins' lists and the round and call pages (one round: pass a
  list of one, ``policy_states([round])[round.pk]``).

The rounds themselves are ``presenting``'s; this module builds on its ``Asked``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.db.models import Count
from django.utils.translation import gettext as _

from mrtrweb.people.roles import is_admin
from mrtrweb.policies.snapshot import PolicySnapshot

from ..models import Call, Event, Round, RoundPart, Vote
from .rounds import Asked, asked_with


def proposal_view(round: Round) -> tuple[Asked, ...]:
    """A quorum round's proposal (the first answers, waiting for approvals) question by
    question, with the answers by their labels as on the call page; () without one."""
    proposal = round.proposal if isinstance(round.proposal, Mapping) else {}
    if not proposal:
        return ()
    return tuple(asked_with(question, proposal.get(question.key)) for question in round.questions())


def votes_of(round: Round) -> list[Vote]:
    """The votes on ``round``'s proposal, first first."""
    return list(Vote.objects.filter(round=round).select_related("voter"))


@dataclass(frozen=True)
class Comment:
    """A note an answerer left for the requester: with an answer, a proposal or a vote."""

    author: Any
    text: str
    at: dt.datetime
    round_index: int | None
    what: str  # answered, proposed, approved, rejected


COMMENTED = {"answered": "answered", "part_answered": "answered", "quorum_proposed": "proposed"}


def comments_of(call: Call, reader: Any = None, *, readable: Collection[int] = ()) -> list[Comment]:
    """Every comment left on ``call``'s rounds that ``reader`` may read, oldest first (from
    the audit trail, where they are kept; the server never gets them). The requester and
    admins read them all (``reader`` None: every comment). Anyone else reads their own, and
    those on the rounds they read whole (``readable``, by key: ``access.readings``); a
    comment on a part of a split round is for the requester, so only its author reads it
    besides them, as the other parts' people never see that part."""
    events = (
        Event.objects.filter(
            call=call,
            kind__in=["answered", "part_answered", "quorum_proposed", "quorum_vote"],
        )
        .select_related("actor", "round")
        .order_by("created_at", "id")
    )
    sees_parts = reader is None or reader.pk == call.started_by_id or is_admin(reader)
    comments = []
    for event in events:
        detail = event.detail if isinstance(event.detail, Mapping) else {}
        text = detail.get("comment")
        if not isinstance(text, str) or not text:
            continue
        theirs = sees_parts or event.actor_id == reader.pk
        if not theirs and (event.kind == "part_answered" or event.round_id not in readable):
            continue
        if event.kind == "quorum_vote":
            what = "approved" if detail.get("verdict") == "approve" else "rejected"
        else:
            what = COMMENTED[event.kind]
        comments.append(
            Comment(
                author=event.actor,
                text=text,
                at=event.created_at,
                round_index=event.round.index if event.round is not None else None,
                what=what,
            )
        )
    return comments


def _quorum_labels(policy: PolicySnapshot, approvals: int, rejections: int) -> list[str]:
    labels = [
        _("approvals %(count)d of %(required)d")
        % {"count": approvals, "required": policy.approvals_required}
    ]
    if policy.rejections_to_decline > 1 and rejections:
        labels.append(
            _("rejections %(count)d of %(required)d")
            % {"count": rejections, "required": policy.rejections_to_decline}
        )
    elif rejections:
        labels.append(_("rejected"))
    return labels


def policy_states(rounds: Sequence[Round]) -> dict[int, list[str]]:
    """Each approval policy's state of every round of a list, as short labels (one query
    for the votes of all of them). The quorum says "approvals 1 of 2"; the other policies
    (split rounds, renewal) add their labels here, so a list shows them all."""
    states: dict[int, list[str]] = {r.pk: [] for r in rounds}
    quorum = {
        r.pk: policy for r in rounds if (policy := PolicySnapshot.from_json(r.call.policy)).quorum
    }
    if quorum:
        counts: dict[tuple[int, str], int] = {
            (row["round_id"], row["verdict"]): row["n"]
            for row in Vote.objects.filter(round_id__in=list(quorum))
            .values("round_id", "verdict")
            .annotate(n=Count("id"))
        }
        for pk, policy in quorum.items():
            states[pk] += _quorum_labels(
                policy,
                counts.get((pk, Vote.Verdict.APPROVE), 0),
                counts.get((pk, Vote.Verdict.REJECT), 0),
            )
    split = [r.pk for r in rounds if r.split]
    if split:
        # Split rounds: "parts answered 1 of 2" (one query for the parts of all of them).
        parts: dict[int, list[str]] = {pk: [] for pk in split}
        for round_id, status in RoundPart.objects.filter(round_id__in=split).values_list(
            "round_id", "status"
        ):
            parts[round_id].append(status)
        for pk, statuses in parts.items():
            states[pk] += _split_labels(statuses)
    return states


def _split_labels(statuses: Sequence[str]) -> list[str]:
    done = sum(status in RoundPart.ANSWERED_STATUSES for status in statuses)
    labels = [_("parts answered %(done)d of %(total)d") % {"done": done, "total": len(statuses)}]
    declined = list(statuses).count(RoundPart.Status.DECLINED)
    if declined:
        labels.append(_("%(count)d declined") % {"count": declined})
    return labels
