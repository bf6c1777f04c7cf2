"""What a webhook says, and the Delivery rows that carry it.

Two events, each delivered once per subscription:

- ``round.pending``: the server asked a question; the round waits for a person (or for the
  program, through ``POST /api/v1/rounds/{id}/responses``);
- ``call.finished``: the call ended: completed (with the result), failed, cancelled or expired
  (with the error).

A payload never carries a round's requestState or the call's credentials: only what the API's
own call and round views show.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable
from functools import partial
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from mrtrweb.calls.models import Call, Round

from .models import Delivery, Subscription
from .sending import LEASE
from .tasks import schedule


def _absolute(path: str) -> str:
    return settings.MRTRWEB_BASE_URL.rstrip("/") + path


def _iso(moment: Any) -> str | None:
    return moment.isoformat().replace("+00:00", "Z") if moment is not None else None


def call_view(call: Call) -> dict[str, Any]:
    view: dict[str, Any] = {
        "id": call.pk,
        "status": call.status,
        "method": call.method,
        "target": call.target,
        "url": _absolute(call.get_absolute_url()),
        "apiUrl": _absolute(f"/api/v1/calls/{call.pk}"),
    }
    if call.is_finished:
        view["finishedAt"] = _iso(call.finished_at)
        view["result"] = call.result if call.status == Call.Status.COMPLETED else None
        view["error"] = call.error or None
    return view


def round_view(round: Round) -> dict[str, Any]:
    view: dict[str, Any] = {
        "id": round.pk,
        "index": round.index,
        "status": round.status,
        "url": _absolute(round.get_absolute_url()),
        "responsesUrl": _absolute(f"/api/v1/rounds/{round.pk}/responses"),
        "inputRequests": round.input_requests,
        # The person's deadline, as the API and the round page give it: under renewal the
        # server's state ends and is renewed long before it.
        "expiresAt": _iso(round.answer_by),
    }
    if round.unsupported_reason:
        view["unsupportedReason"] = round.unsupported_reason
    return view


def active(subscriptions: Iterable[Subscription]) -> list[Subscription]:
    return [s for s in subscriptions if s.can_send]


def subscriptions_of(call_id: int) -> list[Subscription]:
    """The subscriptions of a call whose token may still send.

    Asked on every event of every call, and most calls have none (only programs subscribe):
    whether the call has any is asked first, a query Django compiles in a fraction of the
    time of the one that joins the tokens and their people."""
    if not Subscription.objects.filter(call_id=call_id).exists():
        return []
    return active(
        Subscription.objects.filter(
            call_id=call_id, token__revoked_at__isnull=True, token__user__is_active=True
        ).select_related("token__user")
    )


def round_pending(round: Round, subscriptions: Iterable[Subscription]) -> list[Delivery]:
    body = {"round": round_view(round), "call": call_view(round.call)}
    return _create(
        subscriptions, Delivery.Type.ROUND_PENDING, f"round.pending:{round.pk}", body, round
    )


def call_finished(call: Call, subscriptions: Iterable[Subscription]) -> list[Delivery]:
    if not call.is_finished:
        return []
    return _create(
        subscriptions, Delivery.Type.CALL_FINISHED, "call.finished", {"call": call_view(call)}
    )


def _create(
    subscriptions: Iterable[Subscription],
    event: str,
    key: str,
    body: dict[str, Any],
    round: Round | None = None,
) -> list[Delivery]:
    created = []
    for subscription in subscriptions:
        delivery_id = uuid.uuid4()
        payload = {"id": str(delivery_id), "type": event, "createdAt": _iso(timezone.now()), **body}
        try:
            with transaction.atomic():
                delivery = Delivery.objects.create(
                    uuid=delivery_id,
                    subscription=subscription,
                    call_id=subscription.call_id,
                    round=round,
                    event=event,
                    dedupe_key=key,
                    body=json.dumps(payload, ensure_ascii=False, separators=(",", ":")),
                    # Queued at once on commit; should that task be lost, the scheduler
                    # queues it then.
                    next_attempt_at=timezone.now() + LEASE,
                )
        except IntegrityError:
            continue  # already created by another process or an earlier signal
        created.append(delivery)
        transaction.on_commit(partial(_enqueue, delivery.pk))
    return created


def _enqueue(delivery_id: int) -> None:
    schedule(delivery_id)
