"""Parking a round: the server asked for input, so a person is asked and the call waits."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from ..access.routing import route, stand_in
from ..emails.notices import notify_new_round
from ..models import Call, Round
from . import renewal_policy, splitting
from .reminders import plan as plan_reminders
from .trail import People, record
from .transitions import set_call

__all__ = ["park"]


def park(
    call: Call,
    requests: Mapping[str, Any],
    state: str | None,
    *,
    unsupported: str = "",
    carrier: str = Round.Carrier.RETRY,
    owner: str = "",
    lifetime: timedelta | None = None,
    waiting: bool = False,
) -> Round:
    """Store a round of ``call`` asking ``requests`` (the ``inputRequests`` as the server sent
    them) with its ``requestState``, routed to whoever answers, and set the call waiting.

    ``unsupported`` says why nobody can answer it (request kinds this client cannot show):
    it is parked anyway, so a person can see it and abandon the call.

    A question asked on a handshake-era call's stream (``carrier`` "stream", see
    engine.streams) has no state; ``owner`` is the process holding the stream, and
    ``lifetime`` (the connection's question deadline) replaces the state's lifetime.

    ``waiting``: the caller already set the call waiting in this transaction (the exchange
    does it with the round's count: one update instead of two).
    """
    # No savepoint of its own (two statements a round): nobody catches a failure of parking
    # inside a transaction and goes on, so the whole transaction is rolled back anyway.
    with transaction.atomic(savepoint=False):
        # After the newest round's number, not the count of rounds: the same while no round
        # is ever deleted alone, and never the number of a round there is. The end of the
        # (call, index) unique index, where a count read every round of the call.
        newest = (
            Round.objects.filter(call_id=call.pk)
            .order_by("-index")
            .values_list("index", flat=True)
            .first()
        )
        index = newest + 1 if newest is not None else 1
        user, group = route(call)
        user, delegated_from = stand_in(call, user)  # a delegate answers for who is away
        requests = dict(requests)
        now = timezone.now()
        # A question on a stream has no state to renew: its deadline is the stream's.
        renew_until = (
            None
            if carrier == Round.Carrier.STREAM
            else renewal_policy.deadline(call, now, requests)
        )
        parked = Round(
            call=call,
            index=index,
            input_requests=requests,
            summary=Round.summary_of(requests),
            unsupported_reason=unsupported,
            created_at=now,
            # What the person is shown (Round.answer_by) is when it really expires.
            expires_at=renewal_policy.expires_at(
                now + (lifetime or call.connection.state_lifetime), renew_until, state is not None
            ),
            renew_until=renew_until,
            assigned_user=user,
            assigned_group=group,
            delegated_from=delegated_from,
            carrier=carrier,
            owner=owner,
            heard_at=now if owner else None,
        )
        parked.set_request_state(state)
        parked.save(force_insert=True)
        if not waiting:
            set_call(call, status=Call.Status.WAITING)
        # The questions and the round's number are on the round (the audit trail shows them
        # from there); empty fields are left out: this is stored once per round.
        routed = {"assigned_user": user.get_username()} if user else {}
        if group:
            routed["assigned_group"] = group.name
        if delegated_from:
            routed["delegated_from"] = delegated_from.get_username()

        def people() -> People | None:
            # Asked once committed: a round split meanwhile (below) has parts with people of
            # their own, looked up by the receivers.
            if parked.split:
                return None
            return (
                {call.started_by_id, parked.assigned_user_id, parked.delegated_from_id},
                {parked.assigned_group_id},
            )

        record(
            call,
            "round_parked",
            round=parked,
            people=people,
            told={"index": index},
            **({"unsupported": unsupported} if unsupported else {}),
            request_state_sha256=parked.request_state_sha256,
            **({"carrier": carrier} if carrier != Round.Carrier.RETRY else {}),
            **routed,
        )
        splitting.split(parked, call)  # a split policy's parts, when it routes these keys
        # Robust: a failing notification must not look like a failed exchange.
        transaction.on_commit(lambda: notify_new_round(parked), robust=True)
        plan_reminders(parked)  # reminders and escalation, as the call's policy says
    return parked
