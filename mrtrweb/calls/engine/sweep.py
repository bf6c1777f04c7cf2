"""The sweep: the safety net behind every task (``manage.py expire_rounds``, ``sweep_rounds``)."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from .. import queue
from ..models import Call, Round
from .escalation import remind_due
from .expiry import expire_due
from .safety_nets import unsent_calls
from .streams import lose_orphans
from .watchdogs import check_call, check_deliveries_due

__all__ = ["sweep"]


def sweep(*, now: datetime | None = None, only_expire: bool = False) -> dict[str, int]:
    """Expire open rounds past their state lifetime, mark lost the stream rounds whose owner
    stopped beating, requeue answered rounds whose delivery task was lost, send reminders and
    escalations left behind, flag deliveries whose sender died, and fail calls left running by
    a sender that died. Safe to run any time, from any number of processes. ``only_expire``
    does the first part alone (the expiry tasks)."""
    now = now or timezone.now()
    counts = {"expired": expire_due(now), "requeued": 0, "flagged": 0}
    if only_expire:
        return counts
    counts["reminded"] = remind_due(now)  # reminders and escalations a lost task left
    # Questions on the stream of a process that stopped beating: lost, answers kept.
    counts["lost"] = lose_orphans(now)
    grace = timedelta(seconds=float(settings.MRTRWEB_DELIVERY_GRACE))
    # Rounds waiting for an account to be connected are not stranded: the resume sends them.
    stranded = Round.objects.filter(
        status=Round.Status.SUBMITTED,
        call__waiting_for_authorization_since__isnull=True,
        carrier=Round.Carrier.RETRY,
    ).filter(
        Q(next_attempt_at__lte=now - grace)
        | Q(next_attempt_at__isnull=True, answered_at__lte=now - grace)
    )
    # A second delivery task is harmless: only one of them can claim the round.
    counts["requeued"] += queue.enqueue_each("deliver_round", stranded)
    counts["flagged"] = check_deliveries_due(now=now)
    running = Call.objects.filter(status=Call.Status.RUNNING)
    # Started and never sent (their process died, and its safety net did not run, or its
    # send_call task is gone): sent now. A second task is harmless: only one sender can
    # claim the call.
    counts["requeued"] += queue.enqueue_each("send_call", unsent_calls(now - grace))
    counts["failed"] = 0
    for call_id in running.filter(sent_at__isnull=False).values_list("pk", flat=True):
        counts["failed"] += check_call(call_id, now=now)
    return counts
