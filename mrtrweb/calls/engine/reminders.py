"""Reminders: a pending round's assignees are emailed at the fractions of its answering time
that the call's policy names (``PolicySnapshot.reminders``, e.g. ``[0.5, 0.9]``).

The answering time runs from parking to the deadline the person sees (``Round.answer_by``).
Each reminder is sent once: ``Round.reminders_sent`` counts them, and only the update that
moves it on sends (a guarded update, so two schedulers racing send one email). A round
answered or closed meanwhile is no longer pending and gets none.

Like expiry, nothing is queued: ``Round.remind_at`` holds when a round next needs looking at
(its next reminder or its escalation, ``engine.escalation``), and the scheduler
(:mod:`.due`) does it then. This module plans and sends; ``escalation`` drives both.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.db import transaction

from mrtrweb.policies.snapshot import PolicySnapshot

from ..emails.reminder_notices import notify_reminder
from ..models import Round
from .trail import record
from .transitions import transition

__all__ = [
    "escalation_due_at",
    "next_due",
    "plan",
    "policy_of",
    "reminder_moments",
    "send_reminder",
]


def policy_of(round: Round) -> PolicySnapshot:
    return PolicySnapshot.from_json(round.call.policy)


def reminder_moments(round: Round, policy: PolicySnapshot) -> list[datetime]:
    """When each of the policy's reminders is due for ``round``, earliest first. Fractions
    outside (0, 1) are ignored: a reminder at or after the deadline reminds nobody of it."""
    deadline = round.answer_by
    if deadline is None:
        return []
    span = deadline - round.created_at
    fractions = sorted({f for f in policy.reminders if 0 < f < 1})
    return [round.created_at + span * f for f in fractions]


def escalation_due_at(round: Round, policy: PolicySnapshot) -> datetime | None:
    """When ``round`` is escalated, if the policy escalates it and it was not already."""
    if policy.escalate_after_seconds is None or round.escalated_at is not None:
        return None
    if not (policy.escalate_user or policy.escalate_group):
        return None
    return round.created_at + timedelta(seconds=policy.escalate_after_seconds)


def next_due(round: Round, policy: PolicySnapshot) -> datetime | None:
    """When ``round`` next needs looking at: its next unsent reminder or its escalation."""
    due = reminder_moments(round, policy)[round.reminders_sent :][:1]
    escalation = escalation_due_at(round, policy)
    if escalation is not None:
        due.append(escalation)
    return min(due, default=None)


def plan(round: Round) -> None:
    """Set when ``round`` (pending, in the transaction that parks or moves it) next needs
    looking at: the scheduler does it then. Nothing for a call without such a policy."""
    at = next_due(round, policy_of(round))
    if at is None and round.remind_at is None:
        return
    transition(round, Round.Status.PENDING, Round.Status.PENDING, remind_at=at)
    round.remind_at = at


def send_reminder(round: Round, policy: PolicySnapshot, now: datetime) -> bool:
    """Send ``round`` the latest reminder due by ``now`` if it was not sent yet; True if this
    caller sent it. A round whose reminders all came due while nobody looked (a worker down)
    gets one email, the latest, and counts them all as sent: several at once help nobody."""
    moments = reminder_moments(round, policy)
    passed = sum(1 for moment in moments if moment <= now)
    if passed <= round.reminders_sent:
        return False
    with transaction.atomic():
        if not transition(
            round,
            Round.Status.PENDING,
            Round.Status.PENDING,
            where={"reminders_sent": round.reminders_sent},
            reminders_sent=passed,
        ):
            return False  # answered, closed, or reminded by another task meanwhile
        round.reminders_sent = passed
        fraction = sorted({f for f in policy.reminders if 0 < f < 1})[passed - 1]
        deadline = round.answer_by
        record(
            round.call,
            "reminded",
            round=round,
            reminder=passed,
            of=len(moments),
            fraction=fraction,
            deadline=deadline.isoformat() if deadline else None,
        )
        sent: Any = round
        transaction.on_commit(lambda: notify_reminder(sent, fraction), robust=True)
    return True
