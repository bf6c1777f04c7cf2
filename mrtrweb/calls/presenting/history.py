"""A call's audit trail as it is read: its start, from the call row, then its stored events.

The start is not stored as an event: the call row holds all of it (who started it, when, the
method and target, the call it was started again from) and is as append-only as the trail
for those columns, so an event row would copy it (about an eighth of what a parked round
stored). Calls started before that keep their stored ``started`` event, shown as it is.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..models import Call, Event

__all__ = ["STARTED", "start_of", "trail", "with_start"]

STARTED = "started"


def start_of(call: Call) -> Event:
    """The ``started`` event of ``call`` as the engine announced it, built from the call row
    (not saved: its ``pk`` is None). Reads ``call.started_by`` (select it with the call)."""
    detail: dict[str, object] = {"method": call.method, "target": call.target}
    if call.restarted_from_id is not None:
        detail["restarted_from"] = call.restarted_from_id
    event = Event(
        call=call,
        round=None,
        kind=STARTED,
        actor=call.started_by,
        detail=detail,
        created_at=call.created_at,
    )
    event.round_index = None  # type: ignore[attr-defined]  # as the audit page annotates
    return event


def with_start(call: Call, events: Iterable[Event]) -> list[Event]:
    """``events`` (the call's stored ones, oldest first) after the call's start, unless they
    hold a stored start already (a call started before the start was read from its row)."""
    events = list(events)
    if any(event.kind == STARTED for event in events):
        return events
    return [start_of(call), *events]


def trail(call: Call) -> list[Event]:
    """The whole trail of ``call``, oldest first: its start, then every stored event."""
    return with_start(call, call.events.select_related("actor").order_by("created_at", "id"))
