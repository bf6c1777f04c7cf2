"""The audit trail: every transition records an event, announced once it is committed."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from django.db import transaction

from ..models import Call, Event, Round
from ..signals import call_event
from . import digests

__all__ = ["People", "announce", "dump", "note", "people_of", "record"]

logger = logging.getLogger(__name__)


def dump(model: Any) -> Any:
    """A pydantic model of the protocol as the JSON the server sent (aliases, no nulls)."""
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


# Who a round's event concerns, as the engine that just wrote the round knows it: the ids of
# users and of groups (None among them is ignored). Told on commit, so the receivers that
# tell people (mrtrweb.live.events) need not read the round again.
People = tuple[set[int | None], set[int | None]]


def people_of(round: Round, *, answered_by: Any = None) -> People | None:
    """Whom an event of ``round`` concerns, from a row read while nobody could change who it
    is routed to, claimed or answered by (it was not pending); None for a split round (its
    parts have people of their own: receivers look them up).

    ``answered_by``: the person answering the round as read (still pending): the answer
    claims it for them unless someone had, so they are who answered and, perhaps, claimed.
    """
    if round.split:
        return None
    if answered_by is None:
        claimed, answered = round.claimed_by_id, round.answered_by_id
    else:
        claimed, answered = round.claimed_by_id or answered_by.pk, answered_by.pk
    users = {round.assigned_user_id, claimed, answered}
    users |= {round.call.started_by_id, round.delegated_from_id}
    return users, {round.assigned_group_id}


def record(
    call: Call,
    kind: str,
    *,
    round: Round | None = None,
    actor: Any = None,
    people: Callable[[], People | None] | None = None,
    told: Mapping[str, Any] | None = None,
    **detail: Any,
) -> None:
    """Add ``kind`` to the call's trail, and announce it through ``call_event`` on commit.

    ``people``, asked once committed, says whom a round's event concerns when the caller
    knows it for sure (it wrote the round in this transaction); None: receivers look it up.

    ``told``: detail the announcement carries (receivers and the event log read it there)
    but the row does not store, because the event's round row holds it already (its number:
    the audit trail shows it from there), so every parked round does not store it twice.
    """
    kept = detail
    if digests.DIGEST in detail:
        # Stored compact; announced (and logged) as hex.
        kept = {**detail, digests.DIGEST: digests.stored(detail[digests.DIGEST])}
    Event(call=call, round=round, kind=kind, actor=actor, detail=kept).save(force_insert=True)
    announce(call, kind, round=round, people=people, **(told or {}), **detail)


def announce(
    call: Call,
    kind: str,
    *,
    round: Round | None = None,
    people: Callable[[], People | None] | None = None,
    **detail: Any,
) -> None:
    """Announce ``kind`` through ``call_event`` on commit without storing it: only for what
    the rows hold already (a call's start: ``calls.presenting.history`` shows it from the call
    row)."""
    call_id, round_id = call.pk, round.pk if round is not None else None
    started_by_id = call.started_by_id
    # Every transition that finishes a call sets its status (set_call) before recording it.
    call_finished = call.status in Call.FINISHED
    transaction.on_commit(
        lambda: _announce(
            call_id=call_id,
            round_id=round_id,
            kind=kind,
            detail=detail,
            started_by_id=started_by_id,
            call_finished=call_finished,
            people=people() if people is not None else None,
        )
    )


def note(call: Call, kind: str, *, round: Round | None = None, **detail: Any) -> None:
    """Add something that happened around a call to its audit trail without changing its state
    (a webhook delivered, say). Announced like every event, so receivers must ignore kinds
    they cause themselves."""
    record(call, kind, round=round, **detail)


def _announce(**event: Any) -> None:
    for receiver, outcome in call_event.send_robust(sender=Call, **event):
        if isinstance(outcome, Exception):
            logger.error("receiver %r failed on %s", receiver, event["kind"], exc_info=outcome)
