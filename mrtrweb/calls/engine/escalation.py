"""Escalation: a round still unanswered ``escalate_after_seconds`` after it was parked goes to
the policy's fallback person or group (``escalate_user`` / ``escalate_group``), through the
engine's own reassignment (``actions.reassign``, recorded as ``escalated``): the fallback is
emailed as for any round routed to them, and whoever had it is told it moved on.

This module also drives the reminders (``engine.reminders``): :func:`remind_if_due` is what
the scheduler runs for a round due (:mod:`.due`). It lives here rather than in ``reminders``
because parking plans reminders, and reassigning (this module) sits above parking.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction
from django.utils import timezone

from mrtrweb.policies.snapshot import PolicySnapshot

from ..access.routing import standing_in_now
from ..emails.reminder_notices import notify_escalated_away
from ..models import Round
from .actions import reassign
from .reminders import escalation_due_at, plan, policy_of, send_reminder
from .transitions import AlreadyAnswered, transition

__all__ = ["escalate", "remind_if_due"]


def _fallback(policy: PolicySnapshot) -> tuple[Any, Any]:
    """``(user, group)`` of the policy's fallback (the person over the group), or both None
    when neither exists any more (deleted, deactivated)."""
    if policy.escalate_user:
        people = get_user_model()
        user = people.objects.filter(
            is_active=True, **{people.USERNAME_FIELD: policy.escalate_user}
        ).first()
        if user is not None:
            return user, None
    if policy.escalate_group:
        group = Group.objects.filter(name=policy.escalate_group).first()
        if group is not None:
            return None, group
    return None, None


def escalate(round: Round, policy: PolicySnapshot, now: datetime) -> bool:
    """Reassign ``round`` to the policy's fallback, once; True if this caller did."""
    due = escalation_due_at(round, policy)
    if due is None or due > now:
        return False
    user, group = _fallback(policy)
    with transaction.atomic():
        # Claimed first, so two tasks racing escalate once; a round whose fallback is gone is
        # marked escalated all the same (nothing to escalate to, and nothing to retry).
        if not transition(
            round,
            Round.Status.PENDING,
            Round.Status.PENDING,
            where={"escalated_at__isnull": True},
            escalated_at=now,
        ):
            return False
        round.escalated_at = now
        if user is None and group is None:
            return False
        if (user is not None and round.assigned_user_id == user.pk) or (
            group is not None and round.assigned_group_id == group.pk
        ):
            return False  # already with the fallback: nobody to hand it to
        before: dict[str, Any] = {
            "user": round.assigned_user,
            "group": round.assigned_group,
            "claimed_by": round.claimed_by,
            "stand_in": standing_in_now(round),
        }
        try:
            reassign(
                round,
                None,
                user=user,
                group=group,
                kind="escalated",
                after_seconds=policy.escalate_after_seconds,
                **(
                    {"from_user": before["user"].get_username()}
                    if before["user"] is not None
                    else {"from_group": before["group"].name}
                    if before["group"] is not None
                    else {}
                ),
            )
        except AlreadyAnswered:
            return False
        moved: Any = round
        transaction.on_commit(lambda: notify_escalated_away(moved, **before), robust=True)
    return True


def remind_if_due(round_id: int, *, now: datetime | None = None) -> int:
    """Send ``round_id`` its reminder and escalate it, whichever is due by ``now`` and not
    done yet, then plan its next; how many of the two it did."""
    now = now or timezone.now()
    round = (
        Round.objects.select_related(
            "call__connection", "call__started_by", "assigned_user", "assigned_group", "claimed_by"
        )
        .filter(pk=round_id, status=Round.Status.PENDING, remind_at__lte=now)
        .first()
    )
    if round is None:
        return 0
    policy = policy_of(round)
    done = 0
    with transaction.atomic():
        # Escalation first: a reminder due at the same time then reaches the fallback.
        if escalate(round, policy, now):
            done += 1
            round.refresh_from_db()
        done += send_reminder(round, policy, now)
        round.refresh_from_db()
        if round.status == Round.Status.PENDING:
            plan(round)
    return done
