"""Turns the engine's audit events into webhook deliveries (connected in ``apps.py``)."""

from __future__ import annotations

from typing import Any

from mrtrweb.calls.models import Call, Round

from . import events

# Kinds this app records itself (through engine.note): never a reason to send anything.
OWN_PREFIX = "webhook_"


def on_call_event(
    sender: Any,
    *,
    call_id: int,
    round_id: int | None,
    kind: str,
    call_finished: bool | None = None,
    **_: Any,
) -> None:
    if kind.startswith(OWN_PREFIX):
        return
    # Only a parked round or a finished call sends anything; the engine says which events
    # finish the call, so most of a round's events look nothing up.
    if kind != "round_parked" and call_finished is False:
        return
    subscriptions = events.subscriptions_of(call_id)
    if not subscriptions:
        return
    if kind == "round_parked" and round_id is not None:
        round = Round.objects.select_related("call").filter(pk=round_id).first()
        if round is not None:
            events.round_pending(round, subscriptions)
    # Whatever the kind ("completed", "failed", "expired", "abandoned", or one added later),
    # a finished call is announced once: the delivery's dedupe key sees to "once".
    call = Call.objects.filter(pk=call_id).first()
    if call is not None and call.is_finished:
        events.call_finished(call, subscriptions)
