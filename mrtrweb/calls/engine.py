"""The state machine of a call and its rounds: the one place that changes their status.

    start ──► running ──► completed | failed
                 │ InputRequiredResult with requests
                 ▼
              waiting ◄──────────────────────────────┐
   round:     pending ──answer──► submitted ──claim──► delivering ──► delivered
                 │                    ▲                    │ (next round, or the result)
                 │                    └── retry ── failed ◄┘ (server unreachable, ...)
                 └── expired (requestState rejected) / cancelled

Every transition is an ``UPDATE ... WHERE status = <expected>`` whose row count
decides who won, so a round is answered once and resubmitted once even when two
browsers or two workers race. The network part runs outside any transaction.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Mapping
from typing import Any

import mcp_types
from asgiref.sync import async_to_sync
from django.db import transaction
from django.db.models import F, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from mrtrweb.elicitation import answers_match
from mrtrweb.mcp import (
    InvalidRequestState,
    MCPClient,
    MCPError,
    UnsupportedInputRequest,
)
from mrtrweb.servers.models import Connection

from .models import Call, Event, Round
from .notify import notify_new_round
from .routing import route
from .signals import call_event

__all__ = [
    "AlreadyAnswered",
    "EngineError",
    "NotAnswerable",
    "abandon",
    "cancel_round",
    "claim",
    "deliver",
    "expire",
    "note",
    "reassign",
    "release",
    "restart",
    "retry_delivery",
    "saved_answers_for",
    "start_call",
    "submit_answers",
]

logger = logging.getLogger(__name__)

_FIRST_BACKOFF = 0.05
_MAX_BACKOFF = 0.25


class EngineError(Exception):
    """A transition that the current state does not allow."""


class AlreadyAnswered(EngineError):
    """The round was answered (or closed) by someone else first."""


class NotAnswerable(EngineError):
    """The round cannot be answered (unsupported request kinds, or not pending)."""


def _dump(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def _record(
    call: Call,
    kind: str,
    *,
    round: Round | None = None,
    actor: Any = None,
    **detail: Any,
) -> None:
    Event.objects.create(call=call, round=round, kind=kind, actor=actor, detail=detail)
    call_id, round_id = call.pk, round.pk if round is not None else None
    transaction.on_commit(
        lambda: _announce(call_id=call_id, round_id=round_id, kind=kind, detail=detail)
    )


def note(call: Call, kind: str, *, round: Round | None = None, **detail: Any) -> None:
    """Add something that happened around a call to its audit trail without changing its state
    (a webhook delivered, say). Announced like every event, so receivers must ignore kinds
    they cause themselves."""
    _record(call, kind, round=round, **detail)


def _announce(**event: Any) -> None:
    for receiver, outcome in call_event.send_robust(sender=Call, **event):
        if isinstance(outcome, Exception):
            logger.error("receiver %r failed on %s", receiver, event["kind"], exc_info=outcome)


def _set_call(call: Call, **fields: Any) -> None:
    for name, value in fields.items():
        setattr(call, name, value)
    if "status" in fields and fields["status"] in Call.FINISHED:
        call.finished_at = timezone.now()
        fields["finished_at"] = call.finished_at
    Call.objects.filter(pk=call.pk).update(**fields, updated_at=timezone.now())


# -- talking to the server ------------------------------------------------------------------


async def _send(
    call: Call,
    connection: Connection,
    responses: Mapping[str, Any] | None,
    state: str | None,
) -> Any:
    """The server's answer and the HTTP status it came with (for the audit trail)."""
    async with MCPClient(connection.client_settings(call.credentials)) as client:
        if call.method == Call.Method.TOOL:
            tool = mcp_types.Tool.model_validate(call.tool) if call.tool else None
            result: Any = await client.call_tool(
                call.target,
                call.arguments_json,
                input_responses=responses,
                request_state=state,
                tool=tool,
            )
        elif call.method == Call.Method.PROMPT:
            result = await client.get_prompt(
                call.target, call.arguments_json, input_responses=responses, request_state=state
            )
        else:
            result = await client.read_resource(
                call.target, input_responses=responses, request_state=state
            )
        return result, client.last_http_status


def _run(call: Call, *, round: Round | None, responses: Any, state: str | None) -> None:
    """Send the call (or a round's answers) and record what came back.

    State-only rounds are retried here with backoff; no person ever sees them.
    """
    connection = call.connection
    backoff = _FIRST_BACKOFF
    while True:
        try:
            result, http_status = async_to_sync(_send)(call, connection, responses, state)
        except InvalidRequestState as exc:
            _state_rejected(call, round, exc)
            return
        except UnsupportedInputRequest as exc:
            _close_round(round)
            _park(call, exc.raw_result, unsupported=str(exc))
            return
        except MCPError as exc:
            _delivery_failed(call, round, exc)
            return
        if round is not None:
            _close_round(round, http_status=http_status)
            round = None
        if not isinstance(result, mcp_types.InputRequiredResult):
            _complete(call, result)
            return
        Call.objects.filter(pk=call.pk).update(rounds_used=F("rounds_used") + 1)
        call.refresh_from_db(fields=["rounds_used"])
        if call.rounds_used > connection.max_rounds:
            _set_call(
                call,
                status=Call.Status.FAILED,
                error=f"The server asked for input more than {connection.max_rounds} times.",
            )
            _record(call, "failed", reason="round cap", cap=connection.max_rounds)
            return
        if result.input_requests:
            _park(call, _dump(result))
            return
        # A state-only round: retry at once with the echoed state, backing off a little.
        _record(call, "state_only_retry", request_state_sha256=_sha(result.request_state))
        time.sleep(backoff)
        backoff = min(backoff * 2, _MAX_BACKOFF)
        responses, state = None, result.request_state


def _sha(state: str | None) -> str:
    return hashlib.sha256(state.encode()).hexdigest() if state is not None else ""


def _close_round(round: Round | None, *, http_status: int | None = None) -> None:
    if round is None:
        return
    now = timezone.now()
    Round.objects.filter(pk=round.pk, status=Round.Status.DELIVERING).update(
        status=Round.Status.DELIVERED, delivered_at=now, delivery_error=""
    )
    _record(round.call, "delivered", round=round, http_status=http_status)


def _park(call: Call, raw: Mapping[str, Any], *, unsupported: str = "") -> Round:
    connection = call.connection
    with transaction.atomic():
        index = call.rounds.count() + 1
        user, group = route(call)
        requests = dict(raw.get("inputRequests") or {})
        parked = Round(
            call=call,
            index=index,
            input_requests=requests,
            summary=Round.summary_of(requests),
            unsupported_reason=unsupported,
            expires_at=timezone.now() + connection.state_lifetime,
            assigned_user=user,
            assigned_group=group,
        )
        parked.set_request_state(raw.get("requestState"))
        parked.save()
        _set_call(call, status=Call.Status.WAITING)
        _record(
            call,
            "round_parked",
            round=parked,
            index=index,
            asked=_questions(parked.input_requests),
            unsupported=unsupported,
            request_state_sha256=parked.request_state_sha256,
            assigned_user=user.get_username() if user else None,
            assigned_group=group.name if group else None,
        )
        transaction.on_commit(lambda: notify_new_round(parked))
    return parked


def _questions(requests: Mapping[str, Any]) -> list[dict[str, Any]]:
    asked = []
    for key, request in requests.items():
        params = request.get("params") if isinstance(request, dict) else None
        params = params if isinstance(params, dict) else {}
        asked.append(
            {
                "key": key,
                "method": request.get("method") if isinstance(request, dict) else None,
                "mode": params.get("mode", "form"),
                "message": params.get("message"),
            }
        )
    return asked


def _complete(call: Call, result: Any) -> None:
    raw = _dump(result)
    _set_call(call, status=Call.Status.COMPLETED, result=raw, error="")
    _record(call, "completed", is_error=bool(raw.get("isError")))


def _state_rejected(call: Call, round: Round | None, exc: InvalidRequestState) -> None:
    with transaction.atomic():
        if round is not None:
            Round.objects.filter(pk=round.pk).update(
                status=Round.Status.EXPIRED, delivery_error=str(exc)
            )
        _set_call(
            call,
            status=Call.Status.EXPIRED,
            error="The server no longer accepts this round: its state expired or was rejected. "
            "Your answers are kept; start the call again to answer afresh.",
        )
        _record(
            call, "expired", round=round, server_message=exc.message, http_status=exc.http_status
        )


def _delivery_failed(call: Call, round: Round | None, exc: MCPError) -> None:
    message = f"{type(exc).__name__}: {exc}"
    # The HTTP status the server answered with, when it answered at all.
    http_status = getattr(exc, "http_status", None) or getattr(exc, "status", None)
    if round is None:
        # Nothing was parked yet, so there is nothing to keep: the call failed to start.
        _set_call(call, status=Call.Status.FAILED, error=message)
        _record(call, "failed", reason=message)
        return
    Round.objects.filter(pk=round.pk, status=Round.Status.DELIVERING).update(
        status=Round.Status.FAILED, delivery_error=message
    )
    _record(call, "delivery_failed", round=round, reason=message, http_status=http_status)


# -- what people and programs do ------------------------------------------------------------


def start_call(
    *,
    connection: Connection,
    method: str,
    target: str,
    arguments: Mapping[str, Any] | str | None,
    user: Any,
    restarted_from: Call | None = None,
    route_user: Any = None,
    route_group: Any = None,
) -> Call:
    """Create a call and send it; returns it completed, waiting on a round, or failed.

    ``route_user`` or ``route_group`` (at most one) sends its rounds to that person or group
    instead of following the connection's routing policy.
    """
    if route_user is not None and route_group is not None:
        raise ValueError("route a call to a user or to a group, not both")
    if isinstance(arguments, str):
        arguments_json = arguments
        parsed = json.loads(arguments_json)
        if not isinstance(parsed, dict):
            raise ValueError("arguments must be a JSON object")
    else:
        arguments_json = json.dumps(dict(arguments or {}), ensure_ascii=False)
    tool = connection.tool(target) if method == Call.Method.TOOL else None
    call = Call.objects.create(
        connection=connection,
        method=method,
        target=target,
        arguments_json=arguments_json,
        tool=_dump(tool) if tool else None,
        credentials=connection.credentials(),
        started_by=user,
        restarted_from=restarted_from,
        route_user=route_user,
        route_group=route_group,
    )
    _record(
        call,
        "started",
        actor=user,
        method=method,
        target=target,
        restarted_from=restarted_from.pk if restarted_from else None,
    )
    _run(call, round=None, responses=None, state=None)
    call.refresh_from_db()
    return call


def submit_answers(round: Round, responses: Mapping[str, Mapping[str, Any]], user: Any) -> Round:
    """Store a person's answers and queue their delivery, once.

    Raises :class:`AlreadyAnswered` if another post got there first.
    """
    if round.unsupported_reason:
        raise NotAnswerable(round.unsupported_reason)
    answers = {key: dict(value) for key, value in responses.items()}
    with transaction.atomic():
        now = timezone.now()
        won = Round.objects.filter(pk=round.pk, status=Round.Status.PENDING).update(
            status=Round.Status.SUBMITTED,
            answers=answers,
            answered_by=user,
            answered_at=now,
            # Answering a group's round claims it, so it leaves the others' inboxes.
            claimed_by=Coalesce(F("claimed_by"), Value(user.pk)),
            claimed_at=Coalesce(F("claimed_at"), Value(now)),
        )
        if not won:
            raise AlreadyAnswered(f"Round {round.index} was already answered.")
        _record(round.call, "answered", round=round, actor=user, answers=answers)
        transaction.on_commit(lambda: _queue(round.pk))
    round.refresh_from_db()
    return round


def _queue(round_id: int) -> None:
    # Imported here: the task module imports this one.
    from .tasks import deliver_round

    deliver_round.enqueue(round_id)


def deliver(round_id: int) -> None:
    """Resubmit a submitted round. Only the caller that claims the round sends anything."""
    claimed = Round.objects.filter(pk=round_id, status=Round.Status.SUBMITTED).update(
        status=Round.Status.DELIVERING
    )
    if not claimed:
        return
    round = Round.objects.select_related("call__connection").get(pk=round_id)
    call = round.call
    _run(
        call,
        round=round,
        responses=round.answers,
        state=round.request_state if round.has_request_state else None,
    )


def retry_delivery(round: Round, user: Any) -> None:
    """Queue a failed delivery again; the answers are the ones already stored."""
    with transaction.atomic():
        if not Round.objects.filter(pk=round.pk, status=Round.Status.FAILED).update(
            status=Round.Status.SUBMITTED, delivery_error=""
        ):
            raise EngineError("Only a round whose delivery failed can be retried.")
        _record(round.call, "delivery_retried", round=round, actor=user)
        transaction.on_commit(lambda: _queue(round.pk))


def abandon(round: Round, user: Any) -> None:
    """Give up on a round nobody can answer; the server is not waiting, so nothing is sent."""
    with transaction.atomic():
        if not Round.objects.filter(
            pk=round.pk, status__in=[Round.Status.PENDING, Round.Status.FAILED]
        ).update(status=Round.Status.CANCELLED):
            raise AlreadyAnswered("The round is no longer open.")
        call = round.call
        _set_call(call, status=Call.Status.CANCELLED, error="Abandoned by a person.")
        _record(call, "abandoned", round=round, actor=user)


def restart(call: Call, user: Any) -> Call:
    """Start the same call again (same arguments, exactly), e.g. after its state expired."""
    return start_call(
        connection=call.connection,
        method=call.method,
        target=call.target,
        arguments=call.arguments_json,
        user=user,
        restarted_from=call,
        route_user=call.route_user,
        route_group=call.route_group,
    )


def saved_answers_for(round: Round) -> dict[str, dict[str, Any]]:
    """Answers given to the very same questions in the call this one restarted.

    A question is the same when its key and the whole request (message and schema)
    are identical; only accepted form content is offered for pre-filling.
    """
    previous = round.call.restarted_from
    saved: dict[str, dict[str, Any]] = {}
    while previous is not None and len(saved) < len(round.input_requests):
        for old in previous.rounds.exclude(answers=None).order_by("-index"):
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


# -- what admins (and group members) do ---------------------------------------------------


def claim(round: Round, user: Any) -> None:
    """Take a group's round; it leaves the other members' inboxes. Raises if already taken."""
    with transaction.atomic():
        if not Round.objects.filter(
            pk=round.pk, status=Round.Status.PENDING, claimed_by__isnull=True
        ).update(claimed_by=user, claimed_at=timezone.now()):
            raise AlreadyAnswered("Someone else claimed or answered this round first.")
        _record(round.call, "claimed", round=round, actor=user)


def release(round: Round, actor: Any) -> None:
    """Put a claimed round back into its group's inboxes."""
    with transaction.atomic():
        if not Round.objects.filter(
            pk=round.pk, status=Round.Status.PENDING, claimed_by__isnull=False
        ).update(claimed_by=None, claimed_at=None):
            raise EngineError("Only a claimed, pending round can be released.")
        _record(round.call, "released", round=round, actor=actor)


def reassign(round: Round, actor: Any, *, user: Any = None, group: Any = None) -> None:
    """Route a pending round to another user or group (exactly one)."""
    if (user is None) == (group is None):
        raise ValueError("reassign to a user or to a group")
    with transaction.atomic():
        if not Round.objects.filter(pk=round.pk, status=Round.Status.PENDING).update(
            assigned_user=user, assigned_group=group, claimed_by=None, claimed_at=None
        ):
            raise AlreadyAnswered("The round is no longer pending.")
        _record(
            round.call,
            "reassigned",
            round=round,
            actor=actor,
            assigned_user=user.get_username() if user else None,
            assigned_group=group.name if group else None,
        )
        round.refresh_from_db()
        transaction.on_commit(lambda: notify_new_round(round))


def cancel_round(round: Round, actor: Any) -> None:
    """Cancel a pending round: the server is told (``cancel`` for every request) so it learns.

    Rounds nobody can answer (unsupported kinds) are abandoned instead: there is no way to
    answer them, and the server is not waiting.
    """
    if round.unsupported_reason:
        abandon(round, actor)
        return
    submit_answers(round, {key: {"action": "cancel"} for key in round.input_requests}, actor)


def expire(round: Round, actor: Any) -> None:
    """Mark a pending round expired without sending anything (its state is past its life)."""
    with transaction.atomic():
        if not Round.objects.filter(
            pk=round.pk, status__in=[Round.Status.PENDING, Round.Status.FAILED]
        ).update(status=Round.Status.EXPIRED):
            raise AlreadyAnswered("The round is no longer open.")
        call = round.call
        _set_call(
            call,
            status=Call.Status.EXPIRED,
            error="The round expired before it was answered. Start the call again to answer "
            "afresh.",
        )
        _record(call, "expired", round=round, actor=actor)
