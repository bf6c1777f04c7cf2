"""Expiry: a round whose state outlived its lifetime can no longer be answered.

A parked round's ``expires_at`` is its due time: the scheduler (:mod:`.due`) expires it then,
or, under the renewal policy, has it renewed instead.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from ..emails.notices import notify_expired
from ..models import Call, Round
from . import renewal_policy
from .trail import record
from .transitions import AlreadyAnswered, set_call, transition

__all__ = ["EXPIRABLE_OPEN", "EXPIRABLE_WAITING", "expire", "expire_if_due"]

_OPEN = (Round.Status.PENDING, Round.Status.FAILED)
# An answered round whose call waits for its caller to reconnect an account is still open to
# expiry: it is not failed for waiting, but once the server no longer keeps its state, no
# reconnection can send it any more.
EXPIRABLE_WAITING = Q(
    status=Round.Status.SUBMITTED, call__waiting_for_authorization_since__isnull=False
)
EXPIRABLE_OPEN = Q(status__in=_OPEN)
_EXPIRABLE = EXPIRABLE_OPEN | EXPIRABLE_WAITING


def expire(round: Round, actor: Any, *, notify: bool = False) -> None:
    """Mark a pending round expired without sending anything (its state is past its life).

    ``emails.notices`` emails its assignees (the scheduler does; an admin expiring it by hand
    does not).
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
    if renewal_policy.claim(round, now):  # the renewal policy: renewed instead
        return False
    try:
        expire(round, None, notify=True)
    except AlreadyAnswered:  # answered (or expired by another scheduler) in the meantime
        return False
    return True
