"""The one way a round's or a call's status changes under a race: a guarded update.

Every transition is an ``UPDATE ... WHERE status IN (<expected>)`` whose row count decides
who won, so a round is answered once and resubmitted once even when two browsers or two
workers race. Nothing else in the engine writes ``update(...)`` behind a status. Each is the
ORM's ``filter(...).exclude(...).update(...)``: one statement, no read before it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Model, Q
from django.utils import timezone

from .. import handoff
from ..models import Call, Round, RoundPart

__all__ = [
    "AlreadyAnswered",
    "EngineError",
    "NotAnswerable",
    "counted_under_cap",
    "first_look",
    "set_call",
    "this_attempt",
    "touch",
    "transition",
    "transition_call",
    "transition_part",
    "watch_grace",
]


class EngineError(Exception):
    """A transition that the current state does not allow."""


class AlreadyAnswered(EngineError):
    """The round was answered (or closed) by someone else first."""


class NotAnswerable(EngineError):
    """The round cannot be answered (unsupported request kinds, or not pending)."""


Statuses = str | Collection[str]
# A guard beyond the status: field lookups, or a Q (for a condition a lookup cannot say
# without a join, which an UPDATE turns into a subquery of the whole table's keys).
Where = Mapping[str, Any] | Q


def _guarded(
    model: type[Model],
    pk: int,
    from_: Statuses,
    to: str,
    where: Where | None,
    fields: dict[str, Any],
) -> bool:
    expected = [from_] if isinstance(from_, str) else list(from_)
    if to not in expected:
        fields["status"] = to
    if isinstance(where, Q):
        rows = model._default_manager.filter(where, pk=pk, status__in=expected)
    else:
        rows = model._default_manager.filter(pk=pk, status__in=expected, **(where or {}))
    return bool(rows.update(**fields))


def watch_grace() -> timedelta:
    """How long after a request left the watchdog first looks at it: once it could have
    ended (``MRTRWEB_DELIVERY_GRACE``); :mod:`.watchdogs` then sets its real deadline."""
    return timedelta(seconds=float(settings.MRTRWEB_DELIVERY_GRACE))


def first_look(to: str, now: datetime) -> datetime | None:
    """When the scheduler first looks at a round entering ``to`` (``Round.watch_at``): an
    answer a moment after it was taken (its own process sends it at once; should it die, the
    scheduler does), an attempt once it could have ended (:mod:`.watchdogs` then sets its
    real deadline). None for the statuses nobody watches."""
    if to == Round.Status.SUBMITTED:
        return now + handoff.GRACE
    if to == Round.Status.DELIVERING:
        return now + watch_grace()
    return None


def transition(
    round: Round | int,
    from_: Statuses,
    to: str,
    *,
    where: Where | None = None,
    **fields: Any,
) -> bool:
    """Move ``round`` from status ``from_`` (one, or any of several) to ``to`` and set
    ``fields``, if it still is in ``from_`` (and matches ``where``); True if this caller won.

    ``to`` equal to ``from_`` is a guarded change of fields alone (a claim, a reassignment).
    The object in memory is left as it was: a caller that needs the new row reads it again.
    Entering ``submitted`` or ``delivering`` sets when the scheduler looks at the round
    (:func:`first_look`), unless ``fields`` say.
    """
    pk = round if isinstance(round, int) else round.pk
    expected = [from_] if isinstance(from_, str) else from_
    if "watch_at" not in fields and to not in expected:
        look = first_look(to, timezone.now())
        if look is not None:
            fields["watch_at"] = look
    return _guarded(Round, pk, from_, to, where, fields)


def transition_call(
    call: Call | int,
    from_: Statuses,
    to: str,
    *,
    where: Where | None = None,
    **fields: Any,
) -> bool:
    """:func:`transition` for a call."""
    pk = call if isinstance(call, int) else call.pk
    return _guarded(Call, pk, from_, to, where, fields)


def transition_part(
    part: RoundPart | int,
    from_: Statuses,
    to: str,
    *,
    where: Where | None = None,
    **fields: Any,
) -> bool:
    """:func:`transition` for a part of a split round (``engine.splitting``)."""
    pk = part if isinstance(part, int) else part.pk
    return _guarded(RoundPart, pk, from_, to, where, fields)


def counted_under_cap(call: Call, cap: int, *, unless_finished: bool, **fields: Any) -> bool:
    """Set ``fields`` on ``call`` if it has used fewer than ``cap`` rounds (and, with
    ``unless_finished``, is not finished): the round cap's guarded update
    (:mod:`.counting`). True if it matched."""
    rows = Call.objects.filter(pk=call.pk, rounds_used__lt=cap)
    if unless_finished:
        rows = rows.exclude(status__in=list(Call.FINISHED))
    return bool(rows.update(**fields))


def touch(from_: Statuses, where: Mapping[str, Any], **fields: Any) -> int:
    """Set ``fields`` (never the status) on every round matching ``where`` that is still in
    ``from_``: a heartbeat on the rounds a process holds. How many it touched."""
    expected = [from_] if isinstance(from_, str) else list(from_)
    if "status" in fields:
        raise ValueError("touch changes fields alone: a status goes through transition()")
    touched: int = Round.objects.filter(status__in=expected, **where).update(**fields)
    return touched


def this_attempt(round: Round) -> dict[str, Any]:
    """The ``where`` of a round's delivery attempt this process claimed, so it only changes
    the round while that attempt is still its latest.

    ``delivering_since`` is the claim's token: a sender presumed dead by the watchdog that
    answers late, after an admin resent the round, must not overwrite the newer attempt.
    """
    return {"delivering_since": round.delivering_since}


def set_call(call: Call, **fields: Any) -> None:
    """Set a call's fields (and ``finished_at`` when it finishes), unguarded: only ever done
    inside the transaction of a transition that won. The object in memory gets the same
    values as the row (``updated_at`` too), so a caller may hand it on as stored."""
    now = timezone.now()
    if "status" in fields and fields["status"] in Call.FINISHED:
        fields["finished_at"] = now
    fields["updated_at"] = now
    for name, value in fields.items():
        setattr(call, name, value)
    Call.objects.filter(pk=call.pk).update(**fields)
