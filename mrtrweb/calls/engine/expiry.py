"""Expiry: a round whose state outlived its lifetime can no longer be answered.

Parked rounds are expired by ``tasks.expire_rounds_due``, one task per step of deadlines
(``MRTRWEB_EXPIRY_STEP``, a minute) rather than one per round; ``sweep`` catches the rest.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from ..emails.notices import notify_expired
from ..models import Call, Round
from . import renewal
from .batching import expiry_bucket, schedule_batched
from .trail import record
from .transitions import AlreadyAnswered, set_call, transition

__all__ = ["expire", "expire_if_due", "expiry_bucket", "schedule_batched", "schedule_expiry"]

_OPEN = (Round.Status.PENDING, Round.Status.FAILED)
# An answered round whose call waits for its caller to reconnect an account is still open to
# expiry: it is not failed for waiting, but once the server no longer keeps its state, no
# reconnection can send it any more.
_WAITING = Q(status=Round.Status.SUBMITTED, call__waiting_for_authorization_since__isnull=False)
_EXPIRABLE = Q(status__in=_OPEN) | _WAITING


def expire(round: Round, actor: Any, *, notify: bool = False) -> None:
    """Mark a pending round expired without sending anything (its state is past its life).

    ``notify`` emails its assignees (the sweep does; an admin expiring it by hand does not).
    """
    with transaction.atomic():
        waited = False
        if not transition(round, _OPEN, Round.Status.EXPIRED):
            waited = transition(
                round,
                Round.Status.SUBMITTED,
                Round.Status.EXPIRED,
                where={"call__waiting_for_authorization_since__isnull": False},
            )
            if not waited:
                raise AlreadyAnswered("The round is no longer open.")
        call = round.call
        if waited:
            error = (
                "The round expired while it waited for an account to be reconnected: the "
                "server no longer keeps its state. The answers are kept; start the call again."
            )
        else:
            error = "The round expired before it was answered. Start the call again to answer "
            error += "afresh."
        set_call(
            call,
            status=Call.Status.EXPIRED,
            error=error,
            waiting_for_authorization_since=None,
            waiting_for_authorization_reason="",
        )
        waiting: dict[str, Any] = {"waiting_for_authorization": True} if waited else {}
        record(
            call,
            "expired",
            round=round,
            actor=actor,
            expires_at=round.expires_at.isoformat() if round.expires_at else None,
            swept=notify,
            **waiting,
        )
        if notify:
            transaction.on_commit(lambda: notify_expired(round))


def expire_if_due(round_id: int, *, now: datetime | None = None) -> bool:
    """Expire a round whose state lifetime is over, if it is still open. True if it did."""
    now = now or timezone.now()
    round = (
        Round.objects.select_related("call__connection", "assigned_user", "assigned_group")
        .filter(_EXPIRABLE, pk=round_id, expires_at__lte=now)
        .first()
    )
    if round is None:
        return False
    if renewal.claim(round, now, schedule_expiry):  # the renewal policy: renewed instead
        return False
    try:
        expire(round, None, notify=True)
    except AlreadyAnswered:  # answered (or expired by another sweep) in the meantime
        return False
    return True


def expire_due(now: datetime) -> int:
    """Expire every open round whose state lifetime is over by ``now``; how many."""
    # Two queries, each served by round_status_deadline, rather than one OR across a join.
    due = [
        *Round.objects.filter(status__in=_OPEN, expires_at__lte=now).values_list("pk", flat=True),
        *Round.objects.filter(_WAITING, expires_at__lte=now).values_list("pk", flat=True),
    ]
    return sum(expire_if_due(round_id, now=now) for round_id in due)


def schedule_expiry(expires_at: datetime) -> None:
    """Make sure an ``expire_rounds_due`` task runs at or soon after ``expires_at``.

    Call it inside the transaction that parks the round. With the database queue, a task
    already waiting for the same step serves (one row per step, however many rounds park);
    two processes racing both enqueue one, which is harmless (expiring is idempotent). A
    step due within the next one is not shared: its task could already be running, and miss
    a round whose transaction has not committed yet.
    """
    schedule_batched("expire_rounds_due", expires_at)
