"""How each outcome of a request settles its call or the round it resubmitted.

Delivery failures come in two kinds (see :mod:`mrtrweb.mcp.errors`):

- *not delivered* (refused, connect timeout, 429, 503): nothing ran, so the round goes back to
  ``submitted`` and a task resends it later, with exponential backoff and jitter (honouring
  Retry-After), a bounded number of times and never past the round's state lifetime; then it
  is ``failed`` and a person can retry it.
- *outcome unknown* (read timeout, broken stream, garbage, or the sending process died): the
  server may have acted, so the round becomes ``unknown`` and waits for an admin to resend or
  abandon it; a tool that declares ``idempotentHint`` is resent once automatically first.

A request of the call itself (no round yet) that fails fails the call. The answers stay on
the round through all of it.

- *waiting for authorization* (the server refused the OAuth token and only a person can cure
  it: the caller must connect their account again): nothing ran, so nothing is lost and
  nothing is retried blindly. The round goes back to ``submitted`` with its answers (a first
  request is unsent again), the call is marked as waiting, and the caller is emailed; the
  account connected (``authorizations.signals.connected``) sends it, once (engine.resuming).
"""

from __future__ import annotations

import logging
import random
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from mrtrweb.mcp import InvalidRequestState, MCPError, NotDelivered

from .. import queue
from ..emails.notices import notify_reconnect
from ..models import Call, Round
from .trail import dump, people_of, record
from .transitions import set_call, this_attempt, transition, transition_call

__all__ = [
    "complete",
    "delivered",
    "delivery_failed",
    "fail_call",
    "not_delivered",
    "outcome_unknown",
    "state_rejected",
    "wait_for_authorization",
]

logger = logging.getLogger(__name__)

_UNFINISHED = [status for status in Call.Status.values if status not in Call.FINISHED]


def delivered(round: Round, *, http_status: int | None = None, read_at_claim: bool = False) -> bool:
    """Mark the round delivered; False if this attempt is no longer the round's (its answer
    is then dropped, and the newer attempt's answer counts).

    ``read_at_claim``: ``round`` was read in the transaction that claimed this attempt; who
    it concerns cannot have changed since (only a pending round is claimed, released or
    reassigned), so the announcement says so and the receivers need not read it again."""
    settled = {
        "delivered_at": timezone.now(),
        "delivery_error": "",
        "next_attempt_at": None,
        "flagged_at": None,
        "last_http_status": http_status,
    }
    # A late answer to an attempt already flagged as unknown settles it: now it is known.
    if not transition(
        round,
        (Round.Status.DELIVERING, Round.Status.UNKNOWN),
        Round.Status.DELIVERED,
        where=this_attempt(round),
        **settled,
    ):
        record(round.call, "late_answer_ignored", round=round, attempt=round.attempts)
        return False
    # This attempt won: the object in memory is the row as stored (the exchange hands it on).
    round.status = Round.Status.DELIVERED
    for name, value in settled.items():
        setattr(round, name, value)
    record(
        round.call,
        "delivered",
        round=round,
        people=(lambda: people_of(round)) if read_at_claim else None,
        http_status=http_status,
        attempt=round.attempts,
    )
    return True


def complete(call: Call, result: Any) -> None:
    raw = dump(result)
    set_call(call, status=Call.Status.COMPLETED, result=raw, error="")
    record(call, "completed", is_error=bool(raw.get("isError")))


def fail_call(call: Call, error: str, **detail: Any) -> bool:
    """Fail a call that has not finished yet (False if it had); records ``failed``."""
    with transaction.atomic():
        now = timezone.now()
        if not transition_call(
            call, _UNFINISHED, Call.Status.FAILED, error=error, finished_at=now, updated_at=now
        ):
            return False
        call.status, call.error, call.finished_at = Call.Status.FAILED, error, now
        record(call, "failed", **detail)
    return True


def state_rejected(call: Call, round: Round | None, exc: InvalidRequestState) -> None:
    with transaction.atomic():
        if round is not None and not transition(
            round,
            Round.Status.DELIVERING,
            Round.Status.EXPIRED,
            where=this_attempt(round),
            delivery_error=str(exc),
        ):
            return
        set_call(
            call,
            status=Call.Status.EXPIRED,
            error="The server no longer accepts this round: its state expired or was rejected. "
            "Your answers are kept; start the call again to answer afresh.",
        )
        record(
            call, "expired", round=round, server_message=exc.message, http_status=exc.http_status
        )


def _describe(exc: MCPError) -> tuple[str, int | None]:
    """The error as the audit trail and the pages show it, and the HTTP status, if any."""
    # The HTTP status the server answered with, when it answered at all.
    http_status = getattr(exc, "http_status", None)
    return f"{type(exc).__name__}: {exc}", http_status


def delivery_failed(call: Call, round: Round | None, exc: MCPError, *, gave_up: str = "") -> None:
    """The server refused (or the budget is spent): the call fails, or the round waits for
    a person's retry."""
    message, http_status = _describe(exc)
    if round is None:
        # Nothing was parked yet, so there is nothing to keep: the call failed to start.
        fail_call(call, message, reason=message)
        return
    with transaction.atomic():
        if not transition(
            round,
            Round.Status.DELIVERING,
            Round.Status.FAILED,
            where=this_attempt(round),
            delivery_error=message,
            next_attempt_at=None,
            last_http_status=http_status,
        ):
            return
        record(
            call,
            "delivery_failed",
            round=round,
            reason=message,
            http_status=http_status,
            attempt=round.attempts,
            gave_up=gave_up,
        )


def backoff(attempt: int) -> float:
    """Seconds before attempt ``attempt + 1``: doubling from the first delay up to the cap,
    with "equal jitter" (half fixed, half random) so a crowd of rounds does not retry in step.
    """
    first = float(settings.MRTRWEB_DELIVERY_BACKOFF)
    cap = float(settings.MRTRWEB_DELIVERY_BACKOFF_MAX)
    delay: float = min(cap, first * 2 ** max(attempt - 1, 0))
    return delay / 2 + random.uniform(0, delay / 2)  # timing, not secrets


def not_delivered(call: Call, round: Round | None, exc: NotDelivered) -> None:
    """Nothing ran: try again later, within the attempts budget and the state's lifetime."""
    if round is None:
        delivery_failed(call, None, exc)
        return
    round.refresh_from_db(fields=["attempts", "expires_at"])
    message, http_status = _describe(exc)
    retry_after = getattr(exc, "retry_after", None)
    wait = max(backoff(round.attempts), retry_after or 0.0)
    at = timezone.now() + timedelta(seconds=wait)
    if round.attempts >= int(settings.MRTRWEB_DELIVERY_ATTEMPTS):
        delivery_failed(call, round, exc, gave_up=f"{round.attempts} attempts")
        return
    if round.expires_at is not None and at >= round.expires_at:
        delivery_failed(call, round, exc, gave_up="the round's state lifetime")
        return
    with transaction.atomic():
        if not transition(
            round,
            Round.Status.DELIVERING,
            Round.Status.SUBMITTED,
            where=this_attempt(round),
            next_attempt_at=at,
            # The scheduler queues the next attempt then (engine.due).
            watch_at=at,
            delivery_error=message,
            last_http_status=http_status,
        ):
            return
        record(
            call,
            "delivery_retry_scheduled",
            round=round,
            reason=message,
            http_status=http_status,
            attempt=round.attempts,
            retry_after=retry_after,
            retry_at=at.isoformat(),
        )
        if not queue.can_defer("deliver_round"):
            # A backend that runs tasks at once (django-tasks' ImmediateBackend) has no worker,
            # so no scheduler: the next attempt is made now.
            queue.enqueue("deliver_round", round.pk)


def _idempotent(call: Call) -> bool:
    annotations = (call.tool or {}).get("annotations") if call.method == Call.Method.TOOL else None
    return isinstance(annotations, dict) and annotations.get("idempotentHint") is True


def outcome_unknown(call: Call, round: Round | None, exc: MCPError) -> None:
    """The server may have acted: flag the round for an admin, or resend an idempotent tool
    once."""
    if round is None:
        delivery_failed(call, None, exc)
        return
    round.refresh_from_db(fields=["attempts", "auto_resent"])
    message, http_status = _describe(exc)
    resend = _idempotent(call) and not round.auto_resent
    fields: dict[str, Any]
    with transaction.atomic():
        if resend:
            to, fields = Round.Status.SUBMITTED, {"auto_resent": True}
        else:
            to, fields = Round.Status.UNKNOWN, {"flagged_at": timezone.now()}
        if not transition(
            round,
            Round.Status.DELIVERING,
            to,
            where=this_attempt(round),
            **fields,
            next_attempt_at=None,
            delivery_error=message,
            last_http_status=http_status,
        ):
            return
        record(
            call,
            "outcome_unknown",
            round=round,
            reason=message,
            http_status=http_status,
            attempt=round.attempts,
            resent_automatically=resend,
        )
        if resend:
            queue.enqueue("deliver_round", round.pk)
        else:
            logger.warning(
                "round %s of call %s: delivery outcome unknown, flagged for an admin",
                round.pk,
                call.pk,
            )


def wait_for_authorization(call: Call, round: Round | None, reason: str, exc: NotDelivered) -> None:
    """Nothing ran, and a person must connect an account first: park the request, answers
    kept, until :func:`..resuming.resume_authorized` sends it (``reason`` names who)."""
    _, http_status = _describe(exc)
    now = timezone.now()
    with transaction.atomic():
        if round is None:
            # The first request goes back to unsent: whatever sends it after the account is
            # connected claims it again (send_call), so it goes out once.
            if not transition_call(
                call,
                Call.Status.RUNNING,
                Call.Status.RUNNING,
                where={"sent_at__isnull": False},
                sent_at=None,
            ):
                return
        elif not transition(
            round,
            Round.Status.DELIVERING,
            Round.Status.SUBMITTED,
            where=this_attempt(round),
            # Waiting for a person is not a failed attempt: the budget stays as it was.
            attempts=F("attempts") - 1,
            next_attempt_at=None,
            delivery_error=reason,
            last_http_status=http_status,
        ):
            return
        rows = Call.objects.filter(pk=call.pk)
        newly = rows.filter(waiting_for_authorization_since__isnull=True).update(
            waiting_for_authorization_since=now, waiting_for_authorization_reason=reason[:500]
        )
        if not newly:
            rows.update(waiting_for_authorization_reason=reason[:500])
        call.waiting_for_authorization_reason = reason[:500]
        if newly:
            call.waiting_for_authorization_since = now
        record(
            call,
            "waiting_for_authorization",
            round=round,
            reason=reason,
            http_status=http_status,
            attempt=round.attempts if round is not None else None,
        )
        if newly:
            transaction.on_commit(lambda: notify_reconnect(call))
