"""Quorum rounds: a round that N people must approve before its answers go to the server.

The call's policy (``PolicySnapshot.approvals_required`` > 1) makes every round of it a quorum
round, routed to ``approvers_group`` when there is one (``calls.access.routing``; else the round's
own routing):

- the first person's answers become the **proposal**: stored on the round, which stays
  ``pending`` (nobody claims it, so it stays in every approver's inbox);
- the others see the proposal read only and **approve** or **reject** it, each with an
  optional comment (a :class:`~mrtrweb.calls.models.Vote`, one per person and round);
- the proposer counts as the first approval (unless they started the call and the policy
  does not allow self-approval); the ``approvals_required``-th approval moves the round
  ``pending → submitted`` with the proposal as its answers, through the one guarded
  transition every answer takes, so it is sent once whatever races;
- ``rejections_to_decline`` rejections submit a decline of every request instead.

Votes are serialised per round by a row lock (``select_for_update``, PostgreSQL), so the
count that decides is never short of a concurrent vote; the guarded transition makes the
delivery happen once even where rows cannot be locked (SQLite, whose writers queue anyway).
Every step is in the audit trail: ``quorum_proposed``, ``quorum_vote``, then ``answered``.
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import Future
from typing import Any

from django.contrib.auth.models import Group, User
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from mrtrweb.policies.snapshot import PolicySnapshot

from .. import handoff
from ..access.routing import answering_for, answers_as_routed
from ..models import Call, Round, Vote
from .resubmitting import queue_resubmission, resubmit
from .trail import record
from .transitions import AlreadyAnswered, EngineError, NotAnswerable, transition

__all__ = [
    "AlreadyVoted",
    "NoProposal",
    "NotEligible",
    "SelfApproval",
    "applies",
    "cast_for",
    "clean_comment",
    "eligible",
    "policy_of",
    "propose",
    "tally",
    "vote",
    "why_cannot_vote",
]

# A comment is a note for the requester, not a document.
COMMENT_MAX = 2000


class AlreadyVoted(EngineError):
    """This person already approved or rejected the proposal (or made it)."""


class SelfApproval(EngineError):
    """The call's starter may not approve their own call under this policy."""


class NoProposal(EngineError):
    """Nobody has proposed answers yet: there is nothing to approve or reject."""


class NotEligible(EngineError):
    """This person's vote is not one the policy counts: the round is not routed to them, or
    the approvers group does not hold them (nor the person they stand in for). Admins are no
    exception: they cancel or reassign a quorum round, they do not vote on it."""


def cast_for(round: Round, user: User) -> Any:
    """Whose vote ``user`` casts on ``round``: the absent person's when standing in for them
    (``routing.answering_for``), else their own."""
    return answering_for(round, user) or user


def eligible(round: Round, user: User, policy: PolicySnapshot | None = None) -> bool:
    """Whether the policy counts ``user``'s proposal or vote on ``round``: the round is routed
    to them (their group's, theirs, or theirs to stand in for), and under an approvers group
    they cast the vote of one of its members."""
    if not (user.is_active and answers_as_routed(user, round)):
        return False
    policy = policy or policy_of(round.call)
    if not policy.approvers_group:
        return True
    approvers = Group.objects.filter(name=policy.approvers_group).first()
    if approvers is None:
        return True  # deleted since: the round's own routing asks (calls.access.routing)
    return approvers.user_set.filter(pk=cast_for(round, user).pk).exists()


def _already_cast(round: Round, user: User) -> bool:
    """Whether ``user`` voted (for anyone), or the vote they would cast (:func:`cast_for`)
    was cast, by them or for them."""
    whose = cast_for(round, user).pk
    return (
        Vote.objects.filter(round=round)
        .filter(
            Q(voter_id=user.pk) | Q(for_user_id=whose) | Q(for_user__isnull=True, voter_id=whose)
        )
        .exists()
    )


def policy_of(call: Call) -> PolicySnapshot:
    return PolicySnapshot.from_json(call.policy)


def applies(round: Round) -> bool:
    """Whether ``round`` waits for a quorum (its call's policy asks for more than one)."""
    return policy_of(round.call).quorum


def clean_comment(comment: str) -> str:
    return (comment or "").strip()[:COMMENT_MAX]


def _counts_as_approval(round: Round, user: User, policy: PolicySnapshot) -> bool:
    return policy.allow_self_approval or round.call.started_by_id != user.pk


def tally(round: Round) -> tuple[int, int]:
    """(approvals, rejections) of ``round``'s proposal so far."""
    approvals = rejections = 0
    for verdict in Vote.objects.filter(round=round).values_list("verdict", flat=True):
        if verdict == Vote.Verdict.APPROVE:
            approvals += 1
        else:
            rejections += 1
    return approvals, rejections


def why_cannot_vote(round: Round, user: User) -> str:
    """ "" when ``user`` may approve or reject ``round``'s proposal now, else why not: one of
    ``not_pending``, ``not_eligible``, ``no_proposal``, ``proposer``, ``voted``, ``self`` (the
    page says it in words). Access to the round itself is the caller's check
    (``calls.access``)."""
    if not round.is_pending:
        return "not_pending"
    if not eligible(round, user):
        return "not_eligible"
    if round.proposed_at is None:
        return "no_proposal"
    if round.proposed_by_id == user.pk:
        return "proposer"
    if _already_cast(round, user):
        return "voted"
    if not _counts_as_approval(round, user, policy_of(round.call)):
        return "self"
    return ""


def propose(
    round: Round,
    responses: Mapping[str, Mapping[str, Any]],
    user: User,
    *,
    comment: str = "",
    deliver_within: float | None = None,
) -> Round:
    """The first answers to a quorum round, kept as its proposal (``engine.answer`` hands
    them here). Raises :class:`AlreadyAnswered` when someone proposed first."""
    if round.unsupported_reason:
        raise NotAnswerable(round.unsupported_reason)
    policy = policy_of(round.call)
    if not eligible(round, user, policy):
        raise NotEligible("Your answers would not count: this round's approvers are others.")
    answers = {key: dict(value) for key, value in responses.items()}
    comment = clean_comment(comment)
    sending: list[Future[Round | None]] = []
    with transaction.atomic():
        now = timezone.now()
        # No status change: the round waits for the approvals. The guard is the proposal
        # itself, so two first answers racing make one proposal.
        if not transition(
            round,
            Round.Status.PENDING,
            Round.Status.PENDING,
            where={"proposed_at__isnull": True},
            proposal=answers,
            proposed_by=user,
            proposed_at=now,
        ):
            raise AlreadyAnswered(f"Round {round.index} already has proposed answers.")
        counted = _counts_as_approval(round, user, policy)
        if counted:
            Vote.objects.create(
                round=round,
                voter=user,
                for_user=_stood_in(round, user),
                verdict=Vote.Verdict.APPROVE,
                comment=comment,
            )
        record(
            round.call,
            "quorum_proposed",
            round=round,
            actor=user,
            answers=answers,
            approvals_required=policy.approvals_required,
            counted=counted,
            **_commented(comment),
        )
        # A quorum of one approval more than the proposer's is never met by proposing; the
        # check keeps the rule in one place should the proposer's vote alone suffice.
        _settle(round, policy, sending, deliver_within, user)
    return _finish(round, sending, deliver_within)


def vote(
    round: Round,
    user: User,
    verdict: str,
    *,
    comment: str = "",
    deliver_within: float | None = None,
) -> Round:
    """``user`` approves or rejects ``round``'s proposal (``verdict``: ``approve`` or
    ``reject``); the vote that completes the quorum (or the rejections) submits the round.

    Raises :class:`NoProposal`, :class:`AlreadyVoted`, :class:`SelfApproval`, or
    :class:`AlreadyAnswered` once the round no longer waits.
    """
    if verdict not in Vote.Verdict.values:
        raise EngineError(f"Unknown verdict {verdict!r}.")
    policy = policy_of(round.call)
    comment = clean_comment(comment)
    sending: list[Future[Round | None]] = []
    with transaction.atomic():
        # Votes on one round queue here (PostgreSQL): the count below sees every vote
        # committed before this one, so the deciding vote is never missed.
        locked = Round.objects.select_for_update().get(pk=round.pk)
        if not locked.is_pending:
            raise AlreadyAnswered(f"Round {round.index} no longer waits for approvals.")
        if locked.proposed_at is None:
            raise NoProposal("Nobody has proposed answers to this round yet.")
        # Routed as it is now (a reassignment meanwhile is seen), under the lock.
        locked.call = round.call
        if not eligible(locked, user, policy):
            raise NotEligible("Your vote would not count: this round's approvers are others.")
        if locked.proposed_by_id == user.pk:
            raise AlreadyVoted("The proposer's answers already count as their approval.")
        if verdict == Vote.Verdict.APPROVE and not _counts_as_approval(round, user, policy):
            raise SelfApproval("You started this call, so you cannot approve it.")
        # One vote a person: cast by them or by whoever stands in for them, not both (the row
        # lock above serialises this check with any other vote on the round).
        if _already_cast(locked, user):
            raise AlreadyVoted("This vote was already cast, by the person or their stand-in.")
        try:
            with transaction.atomic():
                Vote.objects.create(
                    round=round,
                    voter=user,
                    for_user=_stood_in(locked, user),
                    verdict=verdict,
                    comment=comment,
                )
        except IntegrityError:
            raise AlreadyVoted("You already voted on this round.") from None
        approvals, rejections = tally(round)
        record(
            round.call,
            "quorum_vote",
            round=round,
            actor=user,
            verdict=verdict,
            approvals=approvals,
            rejections=rejections,
            **_commented(comment),
        )
        _settle(locked, policy, sending, deliver_within, user)
    return _finish(round, sending, deliver_within)


def _stood_in(round: Round, user: User) -> Any:
    whose = cast_for(round, user)
    return None if whose.pk == user.pk else whose


def _settle(
    round: Round,
    policy: PolicySnapshot,
    sending: list[Future[Round | None]],
    deliver_within: float | None,
    deciding: Any,
) -> None:
    """Submit the round if the votes so far decide it (inside the caller's transaction).
    Approved, the answers are the proposer's; rejected, the decline is ``deciding``'s, the
    person whose rejection made the count."""
    approvals, rejections = tally(round)
    round.refresh_from_db(fields=["proposal", "proposed_by", "status"])
    if approvals >= policy.approvals_required:
        answers = dict(round.proposal or {})
        answered_by_id = round.proposed_by_id
        detail: dict[str, Any] = {"quorum": "approved", "approvals": approvals}
    elif rejections >= max(policy.rejections_to_decline, 1):
        answers = {key: {"action": "decline"} for key in round.input_requests}
        answered_by_id = deciding.pk
        detail = {"quorum": "rejected", "rejections": rejections}
    else:
        return
    now = timezone.now()
    hand_off = deliver_within is not None and handoff.enabled()
    # The one guarded transition of every answer: whoever wins it is the only one to queue
    # the delivery, so the proposal is submitted once however many approvals race.
    if not transition(
        round,
        Round.Status.PENDING,
        Round.Status.SUBMITTED,
        answers=answers,
        answered_by_id=answered_by_id,
        answered_at=now,
    ):
        return
    if hand_off:
        transaction.on_commit(lambda: sending.append(handoff.start(resubmit, round.pk)))
    record(
        round.call,
        "answered",
        round=round,
        actor=round.proposed_by if detail["quorum"] == "approved" else deciding,
        answers=answers,
        **detail,
    )
    if not hand_off:  # else the scheduler sends it should this process die first
        queue_resubmission(round.pk)


def _finish(
    round: Round, sending: list[Future[Round | None]], deliver_within: float | None
) -> Round:
    if sending:
        handoff.wait_for(sending[0], deliver_within or 0.0)
    round.refresh_from_db()
    return round


def _commented(comment: str) -> dict[str, Any]:
    """The audit entry's comment, when there is one."""
    return {"comment": comment} if comment else {}
