"""The audit trail: every transition records an event, announced once it is committed."""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction

from ..models import Call, Event, Round
from ..signals import call_event

__all__ = ["announce", "dump", "note", "record"]

logger = logging.getLogger(__name__)


def dump(model: Any) -> Any:
    """A pydantic model of the protocol as the JSON the server sent (aliases, no nulls)."""
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def record(
    call: Call,
    kind: str,
    *,
    round: Round | None = None,
    actor: Any = None,
    **detail: Any,
) -> None:
    """Add ``kind`` to the call's trail, and announce it through ``call_event`` on commit."""
    Event.objects.create(call=call, round=round, kind=kind, actor=actor, detail=detail)
    announce(call, kind, round=round, **detail)


def announce(call: Call, kind: str, *, round: Round | None = None, **detail: Any) -> None:
    """Announce ``kind`` through ``call_event`` on commit without storing it: only for what
    the rows hold already (a call's start: ``calls.trail`` shows it from the call row)."""
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
