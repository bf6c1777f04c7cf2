"""Stream rounds: questions a handshake-era server asks on the open stream of a call.

Such a question (``elicitation/create``, a server-to-client request) is parked as a round by
the same code as a 2026-07-28 round (:func:`.parking.park`: routing, notifications, the
audit trail), its request stored as an ``inputRequests`` map of one key, so every page, the
API and the emails read it unchanged. Only the way its answer travels differs
(``Round.carrier`` "stream"): as the JSON-RPC response on the stream, which only the process
holding it can send (``Round.owner``). That process beats on the round (``heard_at``) while
it holds the stream.

The round's statuses are those of any round: ``pending`` until answered (by any process),
``submitted``, then ``delivering`` once the owner claimed it (a guarded transition: sent once)
and sent it, ``delivered`` when the server's next question or its result came back. A round
whose owner stopped beating (the process died) or whose stream broke is *lost*: expired, its
answers kept, with a plain message, and "Start again" fills them in.

Every function here is plain synchronous database work, one transaction each; the
conversation (:mod:`.handshake_calls`) runs them off its event loop.
"""

from __future__ import annotations

import os
import secrets
import socket
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from mrtrweb.elicitation.questions import UnsupportedQuestion, read_questions

from ..models import Call, Round
from .counting import count_round
from .outcomes import delivered
from .parking import park
from .reads import call_to_send
from .trail import record
from .transitions import set_call, touch, transition

__all__ = [
    "ELICITATION_KEY",
    "LOST_AFTER_ANSWER",
    "LOST_BEFORE_ANSWER",
    "OPEN",
    "beat",
    "grace",
    "lose",
    "lose_if_orphaned",
    "orphaned",
    "owner_id",
    "park_question",
    "settle_delivered",
    "take",
    "withdraw",
]

# The key of a stream round's one question in its ``inputRequests``-shaped map.
ELICITATION_KEY = "elicitation"

# A stream round the owner still answers for: not answered yet, answered, or sent and waiting
# for what the server does next.
OPEN = (Round.Status.PENDING, Round.Status.SUBMITTED, Round.Status.DELIVERING)

LOST_BEFORE_ANSWER = (
    "The server's connection was lost before your answer reached it. Start again: your "
    "answers are filled in."
)
LOST_AFTER_ANSWER = (
    "The server's connection was lost after your answer was sent, so the server may or may "
    "not have acted on it. Start again if it should run: your answers are filled in."
)
WITHDRAWN = "The server stopped waiting for this answer and finished the call without it."
TIMED_OUT = (
    "Nobody answered before the deadline, so mrtrweb told the server the question was "
    "cancelled. Start the call again to answer afresh."
)

_owner: tuple[int, str] | None = None


def owner_id() -> str:
    """This process, as the owner of the streams it holds: host, pid and a nonce drawn once
    per process (a pid reused after a restart is not the same owner)."""
    global _owner
    if _owner is None or _owner[0] != os.getpid():
        nonce = secrets.token_hex(4)
        _owner = (os.getpid(), f"{socket.gethostname()[:100]}:{os.getpid()}:{nonce}")
    return _owner[1]


def grace() -> timedelta:
    return timedelta(seconds=float(settings.MRTRWEB_STREAM_GRACE))


def _stream(call_id: int, owner: str) -> Any:
    return Round.objects.filter(call_id=call_id, carrier=Round.Carrier.STREAM, owner=owner)


def settle_delivered(call_id: int, owner: str, http_status: int | None = None) -> None:
    """The server went on after the answers this owner sent (asked again, or answered): those
    rounds are delivered. Inside the caller's transaction."""
    for sent in _stream(call_id, owner).filter(status=Round.Status.DELIVERING):
        delivered(sent, http_status=http_status)


def park_question(call_id: int, request: dict[str, Any], owner: str, deadline: float) -> int | None:
    """Park the server's question (``request``: ``{"method": "elicitation/create", "params":
    ...}``) as a stream round owned by ``owner``, answerable for ``deadline`` seconds; its id,
    or None when the call cannot take it (finished meanwhile, or past its round cap): the
    server is then answered "cancel"."""
    with transaction.atomic():
        call = call_to_send(call_id)
        settle_delivered(call_id, owner)
        if call.is_finished:
            return None
        # Not ``own``: the call was read unfinished in this transaction just above.
        if not count_round(call, own=False, asks=False):
            return None
        requests = {ELICITATION_KEY: request}
        parked = park(
            call,
            requests,
            None,
            unsupported=_unsupported(requests),
            carrier=Round.Carrier.STREAM,
            owner=owner,
            lifetime=timedelta(seconds=deadline),
        )
    parked_pk: int | None = parked.pk
    return parked_pk


def _unsupported(requests: dict[str, Any]) -> str:
    """Why nobody can answer the question ("" when it can be): parked anyway, so a person
    sees it and abandons the call (the server is then answered "cancel")."""
    reasons = [q.reason for q in read_questions(requests) if isinstance(q, UnsupportedQuestion)]
    return " ".join(reasons)


def take(round_id: int, owner: str, *, now: datetime | None = None) -> dict[str, Any] | None:
    """What the owner answers the server now, or None while the round waits for a person.

    An answered round is claimed (``submitted → delivering``, once) and its answer returned
    as an ``ElicitResult``; a round past its deadline is expired and answered "cancel"; one
    that was closed otherwise (abandoned, lost, expired by the scheduler) is answered "cancel".
    """
    now = now or timezone.now()
    round = Round.objects.filter(pk=round_id).only("status", "expires_at", "answers").first()
    if round is None:
        return {"action": "cancel"}
    if round.status == Round.Status.PENDING:
        if round.expires_at is None or now < round.expires_at:
            return None
        _time_out(round_id)
        round.refresh_from_db(fields=["status", "answers"])
    if round.status == Round.Status.SUBMITTED and transition(
        round_id,
        Round.Status.SUBMITTED,
        Round.Status.DELIVERING,
        where={"owner": owner},
        attempts=F("attempts") + 1,
        delivering_since=now,
        heard_at=now,
        next_attempt_at=None,
    ):
        answer = (round.answers or {}).get(ELICITATION_KEY) or {"action": "cancel"}
        result: dict[str, Any] = {"action": answer.get("action", "cancel")}
        if result["action"] == "accept" and isinstance(answer.get("content"), dict):
            result["content"] = answer["content"]
        return result
    if round.status in (Round.Status.PENDING, Round.Status.SUBMITTED):
        return None  # answered just now: claimed on the next look
    return {"action": "cancel"}


def _time_out(round_id: int) -> None:
    with transaction.atomic():
        round = Round.objects.select_related("call").get(pk=round_id)
        if not transition(round, Round.Status.PENDING, Round.Status.EXPIRED):
            return
        call = round.call
        set_call(call, status=Call.Status.EXPIRED, error=TIMED_OUT)
        record(
            call,
            "expired",
            round=round,
            reason="deadline",
            expires_at=round.expires_at.isoformat() if round.expires_at else None,
        )


def beat(call_id: int, owner: str) -> int:
    """The owner is alive and holds the stream: its open rounds' heartbeat; how many."""
    where = {"call_id": call_id, "carrier": Round.Carrier.STREAM, "owner": owner}
    return touch(OPEN, where, heard_at=timezone.now())


def lose(round_id: int, *, why: str, answer_sent: bool | None = None) -> bool:
    """Mark an open stream round lost (its stream or its owner is gone): expired, answers
    kept, the call expired with a plain message. True if this did it.

    ``answer_sent`` says whether the server got the answer (by default: whether the owner
    had claimed it to send); the message says so."""
    with transaction.atomic():
        round = Round.objects.select_related("call").filter(pk=round_id).first()
        if round is None:
            return False
        sent = round.status == Round.Status.DELIVERING if answer_sent is None else answer_sent
        error = LOST_AFTER_ANSWER if sent else LOST_BEFORE_ANSWER
        if not transition(
            round,
            OPEN,
            Round.Status.EXPIRED,
            where={"carrier": Round.Carrier.STREAM},
            # What the pages say of it (presenting.outcome_badges.expiry_of: "lost").
            delivery_error=error,
        ):
            return False
        call = round.call
        if call.is_finished:
            record(call, "lost", round=round, reason="lost", why=why)
            return True
        set_call(call, status=Call.Status.EXPIRED, error=error)
        record(call, "expired", round=round, reason="lost", why=why, answer_sent=sent)
    return True


def orphaned(now: datetime) -> Q:
    """The open stream rounds whose owner stopped beating by ``now`` (the scheduler loses
    them, :mod:`.due`)."""
    stale = now - grace()
    return Q(heard_at__lt=stale) | Q(heard_at__isnull=True, created_at__lt=stale)


def withdraw(round_id: int) -> bool:
    """The server ended the call while its question waited (it gave up on it: the TypeScript
    SDK does after 60 s): the round is cancelled, whatever was typed kept, and the call settles
    with the server's own result. True if this did it."""
    with transaction.atomic():
        round = Round.objects.select_related("call").filter(pk=round_id).first()
        if round is None or not transition(
            round,
            OPEN,
            Round.Status.CANCELLED,
            where={"carrier": Round.Carrier.STREAM},
            delivery_error=WITHDRAWN,
        ):
            return False
        record(round.call, "withdrawn", round=round)
        return True


def lose_if_orphaned(round_id: int, *, now: datetime | None = None) -> bool:
    """Lose the stream round if its owner stopped beating; True if it was lost."""
    now = now or timezone.now()
    orphan = Round.objects.filter(
        orphaned(now), pk=round_id, carrier=Round.Carrier.STREAM, status__in=OPEN
    ).exists()
    return orphan and lose(round_id, why="its process stopped")
