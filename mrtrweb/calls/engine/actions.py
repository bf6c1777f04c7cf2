"""What people, group members and admins do to a round besides answering it: claim, release,
reassign, cancel, retry, resend, abandon. Each is one guarded transition and its event."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from ..emails.notices import notify_new_round
from ..models import Call, Round
from .answering import answer
from .resubmitting import queue_resubmission
from .trail import record
from .transitions import AlreadyAnswered, EngineError, set_call, transition

__all__ = [
    "abandon",
    "abandon_flagged",
    "cancel_round",
    "claim",
    "reassign",
    "release",
    "resend",
    "retry_delivery",
]

_PENDING = Round.Status.PENDING


def claim(round: Round, user: User) -> None:
    """Take a group's round; it leaves the other members' inboxes. Raises if already taken."""
    with transaction.atomic():
        if not transition(
            round,
            _PENDING,
            _PENDING,
            where={"claimed_by__isnull": True},
            claimed_by=user,
            claimed_at=timezone.now(),
        ):
            raise AlreadyAnswered("Someone else claimed or answered this round first.")
        record(round.call, "claimed", round=round, actor=user)


def release(round: Round, actor: Any) -> None:
    """Put a claimed round back into its group's inboxes."""
    with transaction.atomic():
        if not transition(
            round,
            _PENDING,
            _PENDING,
            where={"claimed_by__isnull": False},
            claimed_by=None,
            claimed_at=None,
        ):
            raise EngineError("Only a claimed, pending round can be released.")
        record(round.call, "released", round=round, actor=actor)


def reassign(
    round: Round,
    actor: Any,
    *,
    user: User | None = None,
    group: Any = None,
    kind: str = "reassigned",
    **detail: Any,
) -> None:
    """Route a pending round to another user or group (exactly one). ``kind`` and ``detail``
    are what the audit trail records (an escalation is recorded as ``escalated``).

    It ends any claim and any standing in: a round handed to a stand-in for someone away
    (``delegated_from``) is, once reassigned, no more that person's than anyone else's."""
    if (user is None) == (group is None):
        raise ValueError("reassign to a user or to a group")
    with transaction.atomic():
        if not transition(
            round,
            _PENDING,
            _PENDING,
            assigned_user=user,
            assigned_group=group,
            claimed_by=None,
            claimed_at=None,
            delegated_from=None,
        ):
            raise AlreadyAnswered("The round is no longer pending.")
        record(
            round.call,
            kind,
            round=round,
            actor=actor,
            assigned_user=user.get_username() if user else None,
            assigned_group=group.name if group else None,
            **detail,
        )
        round.refresh_from_db()
        transaction.on_commit(lambda: notify_new_round(round))


def cancel_round(round: Round, actor: Any) -> None:
    """Cancel a pending round: the server is told (``cancel`` for every request) so it learns.

    Rounds nobody can answer (unsupported kinds) are abandoned instead: there is no way to
    answer them, and the server is not waiting.
    """
    if round.unsupported_reason:
        abandon(round, actor)
        return
    answer(
        round, {key: {"action": "cancel"} for key in round.input_requests}, actor, cancelling=True
    )


def abandon(round: Round, user: User) -> None:
    """Give up on a round nobody can answer; the server is not waiting, so nothing is sent."""
    with transaction.atomic():
        if not transition(round, (_PENDING, Round.Status.FAILED), Round.Status.CANCELLED):
            raise AlreadyAnswered("The round is no longer open.")
        call = round.call
        set_call(call, status=Call.Status.CANCELLED, error="Abandoned by a person.")
        record(call, "abandoned", round=round, actor=user)


def retry_delivery(round: Round, user: User) -> None:
    """Queue a failed delivery again; the answers are the ones already stored."""
    with transaction.atomic():
        if not transition(
            round,
            Round.Status.FAILED,
            Round.Status.SUBMITTED,
            # A person's retry starts a fresh budget of automatic attempts.
            delivery_error="",
            attempts=0,
            next_attempt_at=None,
        ):
            raise EngineError("Only a round whose delivery failed can be retried.")
        record(round.call, "delivery_retried", round=round, actor=user)
        queue_resubmission(round.pk)


# -- what admins do with a round whose outcome is unknown ---------------------------------


def resend(round: Round, user: User) -> None:
    """An admin's choice: send a flagged round's stored answers again."""
    with transaction.atomic():
        if not transition(
            round, Round.Status.UNKNOWN, Round.Status.SUBMITTED, attempts=0, next_attempt_at=None
        ):
            raise AlreadyAnswered("The round is no longer waiting for an admin.")
        record(round.call, "resent", round=round, actor=user)
        queue_resubmission(round.pk)


def abandon_flagged(round: Round, user: User) -> None:
    """An admin's choice: stop a flagged round; nothing is sent. The answers stay stored."""
    with transaction.atomic():
        if not transition(round, Round.Status.UNKNOWN, Round.Status.CANCELLED):
            raise AlreadyAnswered("The round is no longer waiting for an admin.")
        call = round.call
        set_call(
            call,
            status=Call.Status.CANCELLED,
            error="Abandoned by an admin after the outcome of its delivery became unknown "
            "(the server may or may not have acted on the answers).",
        )
        record(call, "abandoned", round=round, actor=user, outcome_unknown=True)
