"""Resubmitting: a round's stored answers sent back to the server with the same request.

Four things trigger it: an answer's own process (a delivery thread), the scheduler (an answer
that process never sent, a backoff's next attempt, a send whose task was lost), a person's
retry and an admin's resend. Whatever the trigger, only the caller that claims the
round (``submitted → delivering``) sends anything.
"""

from __future__ import annotations

from django.db import transaction
from django.db.models import Exists, F, OuterRef, Q
from django.utils import timezone

from mrtrweb.mcp import io_loop

from .. import queue
from ..models import Call, Round
from .exchange import run
from .reads import round_to_send
from .streams import lose_if_orphaned
from .transitions import transition

__all__ = ["queue_resubmission", "resubmit"]

_NOT_WAITING_FOR_AUTHORIZATION = Exists(
    Call.objects.filter(pk=OuterRef("call_id"), waiting_for_authorization_since__isnull=True)
)


def queue_resubmission(round_id: int) -> None:
    """Have a task worker resubmit the round (written in the current transaction)."""
    queue.enqueue("deliver_round", round_id)


def resubmit(round_id: int, *, unclaimed_only: bool = False) -> Round | None:
    """Resubmit a submitted round. Only the caller that claims the round sends anything.

    ``unclaimed_only`` (the scheduler, for an answer nobody tried) sends only a round nobody
    has tried yet: once an attempt was made, its backoff, Retry-After and watchdog decide
    what happens next.

    Returns the round with its call as stored when what came back completed the call or
    parked its next round here (``exchange.Exchanged``); None otherwise: read them then.
    """
    with transaction.atomic():
        now = timezone.now()
        if not transition(
            round_id,
            Round.Status.SUBMITTED,
            Round.Status.DELIVERING,
            where=Q(
                # A call waiting for its caller to reconnect is sent by the resume, not
                # before. Asked of the round's own call (EXISTS): a lookup through
                # ``call__`` makes the UPDATE a subquery over a join, which costs Django more
                # to build on every delivery.
                _NOT_WAITING_FOR_AUTHORIZATION,
                # A stream round's answer goes back on its call's stream, by its owner:
                # there is no request to resend (engine.streams).
                carrier=Round.Carrier.RETRY,
                **({"attempts": 0} if unclaimed_only else {}),
            ),
            attempts=F("attempts") + 1,
            delivering_since=now,
            heard_at=None,
            next_attempt_at=None,
        ):
            # Only an owner gone for good leaves a stream round to anyone else: it is lost.
            lose_if_orphaned(round_id)
            return None
        # The claim set when the watchdog looks (Round.watch_at): if this process dies while
        # sending, it finds the round still delivering and flags it (never resends blindly).
        round = round_to_send(round_id)
    # From a task worker or a delivery thread (no event loop of their own), the request goes
    # out on the process's shared loop, over pooled connections.
    with io_loop.attached():
        exchanged = run(
            round.call,
            round=round,
            responses=round.answers,
            state=round.request_state if round.has_request_state else None,
        )
    return exchanged.round
