"""Answering a round: a person's answers stored once, and their resubmission started."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import F, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from mrtrweb.elicitation import answers_match

from .. import handoff
from ..access.routing import answering_for
from ..models import Round
from . import quorum, splitting
from .reads import round_with_call
from .resubmitting import queue_resubmission, resubmit
from .trail import people_of, record
from .transitions import AlreadyAnswered, NotAnswerable, transition

__all__ = ["answer", "saved_answers_for"]

# How often a page that waits for a stream round's outcome looks (the owner looks for the
# answer as often).
ANSWER_POLL = 0.1


def answer(
    round: Round,
    responses: Mapping[str, Mapping[str, Any]],
    user: User,
    *,
    deliver_within: float | None = None,
    comment: str = "",
    cancelling: bool = False,
) -> Round:
    """Store a person's answers and queue their resubmission, once.

    With ``deliver_within`` (seconds), this process sends them at once on a delivery thread
    (:mod:`..handoff`) and waits up to that long for the outcome; the safety net
    (the scheduler, :mod:`.due`) sends them should this process die first. Without
    it (or with ``MRTRWEB_DELIVER_ON_ANSWER`` off, or a task backend that cannot defer), a
    task worker sends them.

    ``comment`` is the person's note for the requester: kept in the audit trail, never sent.

    ``cancelling``: the caller's or an admin's cancel (``actions.cancel_round``), sent as it is
    even under a quorum, whose proposals and votes are the approvers' alone.

    Returns the round with its call as they are now (as the delivery stored them, when it
    settled the call while this waited). Raises :class:`AlreadyAnswered` if another post got
    there first.
    """
    if not cancelling and quorum.applies(round):
        return quorum.propose(
            round, responses, user, comment=comment, deliver_within=deliver_within
        )
    if round.unsupported_reason:
        raise NotAnswerable(round.unsupported_reason)
    answers = {key: dict(value) for key, value in responses.items()}
    # A question on a handshake-era call's stream: the process holding the stream sends the
    # answer (engine.streams); nothing is resent from here.
    stream = round.carrier == Round.Carrier.STREAM
    hand_off = deliver_within is not None and handoff.enabled() and not stream
    # The delivery started once committed (not when an outer transaction is still open).
    sending: list[Future[Round | None]] = []
    with transaction.atomic():
        now = timezone.now()
        comment = quorum.clean_comment(comment)
        if round.split:
            whole = splitting.answer_part(round, answers, user, now, comment=comment)
            # The part's entry keeps its comment; the round's own "answered" does not repeat it.
            comment = ""
            if whole is None:
                current: Round = Round.objects.get(pk=round.pk)
                return current  # a part answered; the rest still wait
            answers = whole
        submitted: dict[str, Any] = {
            "answers": answers,
            "answered_by": user,
            "answered_at": now,
            # Answering a group's round claims it, so it leaves the others' inboxes.
            "claimed_by": Coalesce(F("claimed_by"), Value(user.pk)),
            "claimed_at": Coalesce(F("claimed_at"), Value(now)),
        }
        # Whom the "answered" event concerns, known for sure when the round is still routed
        # as this process read it: the update is guarded on that, so the live receivers need
        # not read the round again (one query an answer). Reassigned or claimed meanwhile
        # (rare): answered all the same, and the receivers look the people up.
        people = people_of(round, answered_by=user)
        if people is None or not transition(
            round,
            Round.Status.PENDING,
            Round.Status.SUBMITTED,
            where=_routing_of(round),
            **submitted,
        ):
            people = None
            if not transition(round, Round.Status.PENDING, Round.Status.SUBMITTED, **submitted):
                raise AlreadyAnswered(f"Round {round.index} was already answered.")
        if hand_off:
            # Registered before the event's hooks, so the delivery starts once the answers are
            # committed, while this thread tells the receivers.
            transaction.on_commit(lambda: sending.append(handoff.start(resubmit, round.pk)))
        note: dict[str, Any] = {"comment": comment} if comment else {}
        # "answered by bob for ada": a delegate's answer says whom it stood in for.
        for_whom = answering_for(round, user)
        if for_whom is not None:
            note["for_user"] = for_whom.get_username()
        record(
            round.call,
            "answered",
            round=round,
            actor=user,
            people=(lambda: people) if people is not None else None,
            answers=answers,
            **note,
        )
        # In the same transaction as the answers (database queue): both are kept, or neither.
        # What this process sends itself, the scheduler sends should it die first
        # (Round.watch_at, set by the answer's transition).
        if not hand_off and not stream:
            queue_resubmission(round.pk)
    if sending:
        # The round and its call as the delivery stored them, when that settled the call
        # while this waited (completed, or waiting on its next round): not read again.
        delivered = handoff.outcome(sending[0], deliver_within or 0.0)
        if delivered is not None:
            return delivered
    elif stream and deliver_within:
        _wait_for_owner(round.pk, deliver_within)
    # With its call as it is now (completed, or waiting on the next round): the answer's
    # page shows both, and reading them together is one query, not two.
    return round_with_call(round.pk)


def _routing_of(round: Round) -> dict[str, Any]:
    """Who ``round`` is routed to, claimed by and handed on from, as read."""
    return {
        "assigned_user_id": round.assigned_user_id,
        "assigned_group_id": round.assigned_group_id,
        "claimed_by_id": round.claimed_by_id,
        "delegated_from_id": round.delegated_from_id,
    }


def _wait_for_owner(round_id: int, wait: float) -> None:
    """Wait up to ``wait`` seconds while the owner of a stream round (perhaps another
    process) sends the answer and hears what the server does next (the round is then
    delivered, or lost)."""
    until = time.monotonic() + wait
    busy = (Round.Status.SUBMITTED, Round.Status.DELIVERING)
    while Round.objects.filter(pk=round_id, status__in=busy).exists():
        if time.monotonic() >= until:
            return
        # Not holding a pooled connection while it sleeps (handoff.release_connection).
        handoff.release_connection()
        time.sleep(ANSWER_POLL)


def saved_answers_for(
    round: Round, read: Callable[[Sequence[Round]], Mapping[int, Round | None]] | None = None
) -> dict[str, dict[str, Any]]:
    """Answers given to the very same questions in the call this one restarted.

    A question is the same when its key and the whole request (message and schema)
    are identical; only accepted form content is offered for pre-filling. ``read`` says
    what of an earlier call's rounds the person filling in the form may read
    (``calls.access.readings``): only those answers are offered, never someone else's.
    """
    previous = round.call.restarted_from
    saved: dict[str, dict[str, Any]] = {}
    while previous is not None and len(saved) < len(round.input_requests):
        olds = list(previous.rounds.exclude(answers=None).order_by("-index"))
        if read is not None:
            shown = read(olds)
            olds = [r for old in olds if (r := shown[old.pk]) is not None]
        for old in olds:
            for key, request in round.input_requests.items():
                answer = (old.answers or {}).get(key)
                if (
                    key not in saved
                    and answer
                    and answer.get("action") == "accept"
                    and isinstance(answer.get("content"), dict)
                    and key in old.input_requests
                    and answers_match((key, old.input_requests[key]), (key, request))
                ):
                    saved[key] = answer["content"]
        previous = previous.restarted_from
    return saved
