"""What the round page shows of a round's approval policies: a quorum round's
proposal, its votes and whether this person may vote, and the comments answerers left."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User

from mrtrweb.policies.snapshot import PolicySnapshot

from .. import engine
from ..access import can_answer
from ..models import Call, Round
from ..presenting.policies import comments_of, proposal_view, votes_of

__all__ = ["QuorumView", "is_quorum", "quorum_view", "round_comments"]


def round_comments(round: Round, call: Call, user: User, quorum: bool) -> list[Any]:
    """The comments left on ``round``. While it waits, only proposals, votes (quorum) and
    parts' answers (split) carry them; a plain pending round has none yet (rounds never go
    back to pending once answered), so its page does not read the audit trail for them."""
    if round.is_pending and not quorum and not round.split:
        return []
    # Its page shows a round its reader may open: whole, unless it is split (their part).
    readable = () if round.split else (round.pk,)
    return [c for c in comments_of(call, user, readable=readable) if c.round_index == round.index]


def is_quorum(round: Round) -> bool:
    return PolicySnapshot.from_json(round.call.policy).quorum


@dataclass(frozen=True)
class QuorumView:
    """What the round page shows of a quorum round: the policy, the proposal by its labels,
    the votes so far, and whether (or why not) this person may approve or reject."""

    policy: PolicySnapshot
    proposal: tuple[Any, ...]
    votes: list[Any]
    labels: list[str]
    cannot_vote: str  # "" when they may vote; engine.why_cannot_vote's reason otherwise
    may_vote: bool


def quorum_view(round: Round, user: User, labels: list[str]) -> QuorumView | None:
    policy = PolicySnapshot.from_json(round.call.policy)
    if not policy.quorum:
        return None
    cannot = engine.why_cannot_vote(round, user)
    return QuorumView(
        policy=policy,
        proposal=proposal_view(round),
        votes=votes_of(round),
        labels=labels,
        cannot_vote=cannot,
        # The call's starter may still reject their own call (self: no approval).
        may_vote=can_answer(user, round) and cannot in ("", "self"),
    )
