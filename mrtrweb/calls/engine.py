"""The state machine of a call and its rounds: the one place that changes their status.

    start ──► running ──► completed | failed
                 │ InputRequiredResult with requests
                 ▼
              waiting ◄──────────────────────────────┐
   round:     pending ──answer──► submitted ──claim──► delivering ──► delivered
                 │                  ▲  ▲  ▲                │ (next round, or the result)
                 │                  │  │  └─ backoff task ─┤ not delivered
                 │                  │  └── retry ── failed ◄┤ (budget or lifetime used up, 4xx)
                 │                  └── resend ── unknown ◄─┘ (outcome unknown: an admin decides)
                 └── expired (requestState rejected, or past its lifetime) / cancelled

Delivery failures come in two kinds (see :mod:`mrtrweb.mcp.errors`):

- *not delivered* (refused, connect timeout, 429, 503): nothing ran, so the round goes back to
  ``submitted`` and a task resends it later, with exponential backoff and jitter (honouring
  Retry-After), a bounded number of times and never past the round's state lifetime; then it
  is ``failed`` and a person can retry it.
- *outcome unknown* (read timeout, broken stream, garbage, or the sending process died): the
  server may have acted, so the round becomes ``unknown`` and waits for an admin to resend or
  abandon it; a tool that declares ``idempotentHint`` is resent once automatically first.

The answers stay on the round through all of it.

Every transition is an ``UPDATE ... WHERE status = <expected>`` whose row count
decides who won, so a round is answered once and resubmitted once even when two
browsers or two workers race. The network part runs outside any transaction.
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from datetime import datetime, timedelta
from typing import Any

import mcp_types
from asgiref.sync import async_to_sync, sync_to_async
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections, transaction
from django.db.models import F, Q, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from mrtrweb.elicitation import answers_match
from mrtrweb.mcp import (
    InvalidRequestState,
    MCPClient,
    MCPError,
    NotDelivered,
    OutcomeUnknown,
    ProtocolError,
    ResponseTooLarge,
    UnsupportedInputRequest,
    io_loop,
)
from mrtrweb.servers.models import Connection

from . import handoff
from .models import Call, Event, Round
from .notify import notify_expired, notify_new_round
from .routing import route
from .signals import call_event

__all__ = [
    "AlreadyAnswered",
    "EngineError",
    "NotAnswerable",
    "abandon",
    "abandon_flagged",
    "cancel_round",
    "check_call",
    "check_delivery",
    "claim",
    "create_call",
    "deliver",
    "expire",
    "expire_if_due",
    "note",
    "reassign",
    "release",
    "resend",
    "restart",
    "retry_delivery",
    "run_call",
    "saved_answers_for",
    "send_call",
    "start_call",
    "submit_answers",
    "sweep",
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
    started_by_id = call.started_by_id
    # Every transition that finishes a call sets its status (_set_call) before recording it.
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
    round: Round | None = None,
) -> Any:
    """The server's answer and the HTTP status it came with (for the audit trail).

    Progress the server streams meanwhile goes to the call's live pages, and keeps the
    delivery watchdog of ``round`` from taking this attempt for a dead one.
    """
    from mrtrweb.live.events import progress_callback

    progress = _with_heartbeat(_keeping_progress(progress_callback(call.pk), call.pk), round)
    async with MCPClient(connection.client_settings(call.credentials)) as client:
        if call.method == Call.Method.TOOL:
            tool = mcp_types.Tool.model_validate(call.tool) if call.tool else None
            result: Any = await client.call_tool(
                call.target,
                call.arguments_json,
                input_responses=responses,
                request_state=state,
                tool=tool,
                on_notification=progress,
            )
        elif call.method == Call.Method.PROMPT:
            result = await client.get_prompt(
                call.target,
                call.arguments_json,
                input_responses=responses,
                request_state=state,
                on_notification=progress,
            )
        else:
            result = await client.read_resource(
                call.target,
                input_responses=responses,
                request_state=state,
                on_notification=progress,
            )
        return result, client.last_http_status


_HEARTBEAT_EVERY = 5.0


# How often the latest progress is written to the call, for pages loaded while it works.
_PROGRESS_EVERY = 1.0


def _keeping_progress(forward: Any, call_id: int) -> Any:
    """``forward`` progress, and keep the latest on the call (at most every second), so a page
    loaded or reloaded while the server works shows where it stands, not only live pages."""
    last = [0.0]

    async def on_notification(notification: Any) -> None:
        await forward(notification)
        if getattr(notification, "method", None) != "notifications/progress":
            return
        if time.monotonic() - last[0] < _PROGRESS_EVERY:
            return
        last[0] = time.monotonic()
        params = notification.params
        kept = {
            "progress": float(params.progress),
            "total": float(params.total) if params.total is not None else None,
            "message": params.message if isinstance(params.message, str) else "",
            "at": time.time(),
        }
        await sync_to_async(_keep_progress)(call_id, kept)

    return on_notification


def _keep_progress(call_id: int, progress: dict[str, Any]) -> None:
    Call.objects.filter(pk=call_id).update(progress=progress)


def _with_heartbeat(forward: Any, round: Round | None) -> Any:
    """``forward`` progress, and note (at most every few seconds) that the server is alive."""
    if round is None:
        return forward
    last = [0.0]

    async def on_notification(notification: Any) -> None:
        await forward(notification)
        if getattr(notification, "method", None) != "notifications/progress":
            return
        if time.monotonic() - last[0] >= _HEARTBEAT_EVERY:
            last[0] = time.monotonic()
            await sync_to_async(_heard)(round)

    return on_notification


def _heard(round: Round) -> None:
    _mine(round).update(heard_at=timezone.now())


def _run(call: Call, *, round: Round | None, responses: Any, state: str | None) -> None:
    """Send the call (or a round's answers) and record what came back.

    State-only rounds are retried here with backoff; no person ever sees them. This is the
    engine's edge: whatever goes wrong here (a bug, an answer that cannot be stored) ends in a
    state a person can act on, never in an exception for the page or a call left running.
    """
    if round is None:
        # Should this process die (or hang) before the call settles, the watchdog fails it;
        # its clock (updated_at) starts now, when the request leaves, not when it was queued.
        with transaction.atomic():
            call.updated_at = timezone.now()
            Call.objects.filter(pk=call.pk).update(updated_at=call.updated_at)
            _watch_call(call)
    try:
        _exchange(call, round=round, responses=responses, state=state)
    except Exception as exc:
        logger.exception("call %s: the exchange with the server broke in mrtrweb", call.pk)
        _crashed(call, round, exc)


def _crashed(call: Call, round: Round | None, exc: Exception) -> None:
    """Settle what an unexpected exception interrupted (see :func:`_run`)."""
    message = f"mrtrweb could not complete the exchange with the server ({type(exc).__name__}: "
    message += f"{str(exc)[:500]})."
    if round is not None:
        if _mine(round).exists():
            # Sent, perhaps acted on, and the answer lost here: an admin decides.
            _outcome_unknown(call, round, OutcomeUnknown(message))
            return
        if not Round.objects.filter(
            pk=round.pk, status=Round.Status.DELIVERED, delivering_since=round.delivering_since
        ).exists():
            return  # a newer attempt owns the round now; its outcome counts
    # The first request, or the retries that followed this attempt's delivered round.
    _fail_call(call, message, reason=f"{type(exc).__name__}: {str(exc)[:500]}")


def _fail_call(call: Call, error: str, **detail: Any) -> bool:
    """Fail a call that has not finished yet (False if it had); records ``failed``."""
    with transaction.atomic():
        now = timezone.now()
        if (
            not Call.objects.filter(pk=call.pk)
            .exclude(status__in=Call.FINISHED)
            .update(status=Call.Status.FAILED, error=error, finished_at=now, updated_at=now)
        ):
            return False
        call.status, call.error, call.finished_at = Call.Status.FAILED, error, now
        _record(call, "failed", **detail)
    return True


def _exchange(call: Call, *, round: Round | None, responses: Any, state: str | None) -> None:
    connection = call.connection
    backoff = _FIRST_BACKOFF
    while True:
        _release_pooled_connection()
        try:
            result, http_status = async_to_sync(_send)(call, connection, responses, state, round)
        except InvalidRequestState as exc:
            _state_rejected(call, round, exc)
            return
        except UnsupportedInputRequest as exc:
            if _close_round(round):
                _park(call, exc.raw_result, unsupported=str(exc))
            return
        except NotDelivered as exc:
            _not_delivered(call, round, exc)
            return
        except (OutcomeUnknown, ProtocolError, ResponseTooLarge) as exc:
            # The request left and what came back (if anything) cannot be trusted: the server
            # may have acted on it.
            _outcome_unknown(call, round, exc)
            return
        except MCPError as exc:
            # The server answered and refused (JSON-RPC error, 4xx, credentials): nothing ran.
            _delivery_failed(call, round, exc)
            return
        # The round closed and what came back stored in one transaction: one commit, and the
        # events' receivers run after the result is stored, not before.
        with transaction.atomic():
            if round is not None:
                if not _close_round(round, http_status=http_status):
                    return
                round = None
            elif Call.objects.filter(pk=call.pk, status__in=Call.FINISHED).exists():
                # The watchdog failed the call while its answer was on the way: it stays so.
                _record(call, "late_answer_ignored")
                return
            if not isinstance(result, mcp_types.InputRequiredResult):
                _complete(call, result)
                return
            # Each request of the call restarts the watchdog's clock (updated_at).
            Call.objects.filter(pk=call.pk).update(
                rounds_used=F("rounds_used") + 1, updated_at=timezone.now()
            )
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


def _release_pooled_connection() -> None:
    """Give a pooled database connection back before waiting on the server: a tool may run
    for minutes, and the pool holds ten a process; the next query takes one again."""
    db = connections[DEFAULT_DB_ALIAS]
    if not db.in_atomic_block and (db.settings_dict.get("OPTIONS") or {}).get("pool"):
        db.close()


def _sha(state: str | None) -> str:
    return hashlib.sha256(state.encode()).hexdigest() if state is not None else ""


def _mine(round: Round, *statuses: str) -> Any:
    """The round, as long as the delivery attempt this process claimed is still its latest.

    ``delivering_since`` is the claim's token: a sender presumed dead by the watchdog that
    answers late, after an admin resent the round, must not overwrite the newer attempt.
    """
    return Round.objects.filter(
        pk=round.pk,
        status__in=statuses or [Round.Status.DELIVERING],
        delivering_since=round.delivering_since,
    )


def _close_round(round: Round | None, *, http_status: int | None = None) -> bool:
    """Mark the round delivered; False if this attempt is no longer the round's (its answer
    is then dropped, and the newer attempt's answer counts)."""
    if round is None:
        return True
    now = timezone.now()
    # A late answer to an attempt already flagged as unknown settles it: now it is known.
    if not _mine(round, Round.Status.DELIVERING, Round.Status.UNKNOWN).update(
        status=Round.Status.DELIVERED,
        delivered_at=now,
        delivery_error="",
        next_attempt_at=None,
        flagged_at=None,
        last_http_status=http_status,
    ):
        _record(round.call, "late_answer_ignored", round=round, attempt=round.attempts)
        return False
    _record(round.call, "delivered", round=round, http_status=http_status, attempt=round.attempts)
    return True


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
        # The questions themselves are on the round (the audit trail shows them from there);
        # empty fields are left out: this is stored once per round.
        routed = {"assigned_user": user.get_username()} if user else {}
        if group:
            routed["assigned_group"] = group.name
        _record(
            call,
            "round_parked",
            round=parked,
            index=index,
            **({"unsupported": unsupported} if unsupported else {}),
            request_state_sha256=parked.request_state_sha256,
            **routed,
        )
        # Robust: a failing notification must not look like a failed exchange (_run).
        transaction.on_commit(lambda: notify_new_round(parked), robust=True)
        # Its expiry, due when its state dies: one task per minute of deadlines, not per round
        # (a task row per round was a third of what a parked round stored).
        from .tasks import schedule_expiry

        schedule_expiry(parked.expires_at)
    return parked


def _complete(call: Call, result: Any) -> None:
    raw = _dump(result)
    _set_call(call, status=Call.Status.COMPLETED, result=raw, error="")
    _record(call, "completed", is_error=bool(raw.get("isError")))


def _state_rejected(call: Call, round: Round | None, exc: InvalidRequestState) -> None:
    with transaction.atomic():
        if round is not None and not _mine(round).update(
            status=Round.Status.EXPIRED, delivery_error=str(exc)
        ):
            return
        _set_call(
            call,
            status=Call.Status.EXPIRED,
            error="The server no longer accepts this round: its state expired or was rejected. "
            "Your answers are kept; start the call again to answer afresh.",
        )
        _record(
            call, "expired", round=round, server_message=exc.message, http_status=exc.http_status
        )


def _describe(exc: MCPError) -> tuple[str, int | None]:
    """The error as the audit trail and the pages show it, and the HTTP status, if any."""
    # The HTTP status the server answered with, when it answered at all.
    http_status = getattr(exc, "http_status", None)
    return f"{type(exc).__name__}: {exc}", http_status


def _delivery_failed(call: Call, round: Round | None, exc: MCPError, *, gave_up: str = "") -> None:
    message, http_status = _describe(exc)
    if round is None:
        # Nothing was parked yet, so there is nothing to keep: the call failed to start.
        _fail_call(call, message, reason=message)
        return
    with transaction.atomic():
        if not _mine(round).update(
            status=Round.Status.FAILED,
            delivery_error=message,
            next_attempt_at=None,
            last_http_status=http_status,
        ):
            return
        _record(
            call,
            "delivery_failed",
            round=round,
            reason=message,
            http_status=http_status,
            attempt=round.attempts,
            gave_up=gave_up,
        )


# -- automatic retries, unknown outcomes and the watchdogs -----------------------------------


def _setting(name: str, default: Any) -> Any:
    return getattr(settings, name, default)


def _backoff(attempt: int) -> float:
    """Seconds before attempt ``attempt + 1``: doubling from the first delay up to the cap,
    with "equal jitter" (half fixed, half random) so a crowd of rounds does not retry in step.
    """
    first = float(_setting("MRTRWEB_DELIVERY_BACKOFF", 2.0))
    cap = float(_setting("MRTRWEB_DELIVERY_BACKOFF_MAX", 300.0))
    delay = min(cap, first * 2 ** max(attempt - 1, 0))
    return delay / 2 + random.uniform(0, delay / 2)  # timing, not secrets


def _stuck_after(connection: Connection) -> timedelta:
    """How long a delivery may go unheard (no progress) before its sender is presumed dead:
    the client's answer deadline ends every live exchange by then."""
    grace = float(_setting("MRTRWEB_DELIVERY_GRACE", 60.0))
    return timedelta(seconds=connection.connect_timeout + connection.answer_deadline + grace)


def _enqueue(
    name: str, *args: Any, at: datetime | None = None, deferred_only: bool = False
) -> None:
    """Queue task ``name`` of :mod:`.tasks`, at ``at`` or now.

    With the database queue the task row is written in the current transaction, so a state
    change and the task that carries it on commit together (no process can die between
    them). Other backends get it after commit; ``deferred_only`` tasks (watchdogs, expiry)
    are skipped by a backend that cannot wait, since running them now would do nothing.
    """
    from django_tasks_db import DatabaseBackend

    from . import tasks  # imported here: the task module imports this one

    task = getattr(tasks, name)
    backend = task.get_backend()
    if at is not None and not backend.supports_defer:
        if deferred_only:
            return
        at = None
    job = task.using(run_after=at) if at is not None else task
    if isinstance(backend, DatabaseBackend):
        job.enqueue(*args)
    else:
        transaction.on_commit(lambda: job.enqueue(*args))


def _not_delivered(call: Call, round: Round | None, exc: NotDelivered) -> None:
    """Nothing ran: try again later, within the attempts budget and the state's lifetime."""
    if round is None:
        _delivery_failed(call, None, exc)
        return
    round.refresh_from_db(fields=["attempts", "expires_at"])
    message, http_status = _describe(exc)
    retry_after = getattr(exc, "retry_after", None)
    wait = max(_backoff(round.attempts), retry_after or 0.0)
    at = timezone.now() + timedelta(seconds=wait)
    if round.attempts >= int(_setting("MRTRWEB_DELIVERY_ATTEMPTS", 8)):
        _delivery_failed(call, round, exc, gave_up=f"{round.attempts} attempts")
        return
    if round.expires_at is not None and at >= round.expires_at:
        _delivery_failed(call, round, exc, gave_up="the round's state lifetime")
        return
    with transaction.atomic():
        if not _mine(round).update(
            status=Round.Status.SUBMITTED,
            next_attempt_at=at,
            delivery_error=message,
            last_http_status=http_status,
        ):
            return
        _record(
            call,
            "delivery_retry_scheduled",
            round=round,
            reason=message,
            http_status=http_status,
            attempt=round.attempts,
            retry_after=retry_after,
            retry_at=at.isoformat(),
        )
        _enqueue("deliver_round", round.pk, at=at)


def _idempotent(call: Call) -> bool:
    annotations = (call.tool or {}).get("annotations") if call.method == Call.Method.TOOL else None
    return isinstance(annotations, dict) and annotations.get("idempotentHint") is True


def _outcome_unknown(call: Call, round: Round | None, exc: MCPError) -> None:
    """The server may have acted: flag the round for an admin, or resend an idempotent tool
    once."""
    if round is None:
        _delivery_failed(call, None, exc)
        return
    round.refresh_from_db(fields=["attempts", "auto_resent"])
    message, http_status = _describe(exc)
    resend = _idempotent(call) and not round.auto_resent
    with transaction.atomic():
        if resend:
            fields: dict[str, Any] = {"status": Round.Status.SUBMITTED, "auto_resent": True}
        else:
            fields = {"status": Round.Status.UNKNOWN, "flagged_at": timezone.now()}
        if not _mine(round).update(
            **fields,
            next_attempt_at=None,
            delivery_error=message,
            last_http_status=http_status,
        ):
            return
        _record(
            call,
            "outcome_unknown",
            round=round,
            reason=message,
            http_status=http_status,
            attempt=round.attempts,
            resent_automatically=resend,
        )
        if resend:
            _enqueue("deliver_round", round.pk)
        else:
            logger.warning(
                "round %s of call %s: delivery outcome unknown, flagged for an admin",
                round.pk,
                call.pk,
            )


# -- what people and programs do ------------------------------------------------------------


def create_call(
    *,
    connection: Connection,
    method: str,
    target: str,
    arguments: Mapping[str, Any] | str | None,
    user: Any,
    restarted_from: Call | None = None,
    route_user: Any = None,
    route_group: Any = None,
    with_call: Callable[[Call], None] | None = None,
) -> Call:
    """Create a call, not sent yet (:func:`run_call` sends it).

    The call, its ``started`` entry and whatever ``with_call(call)`` writes (a webhook
    subscription, the idempotency key of the request that started it) are one transaction:
    all of them are stored, or, when ``with_call`` raises or the database refuses, none.
    On SQLite the transaction takes the write lock first and waits for it (``BEGIN
    IMMEDIATE`` and the lock timeout in settings), so a busy database is waited for rather
    than half-written.

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
    credentials = connection.credentials()
    if not credentials.get("bearer_token") and not credentials.get("headers"):
        # Nothing to send: {} (stored as is, not encrypted), which still means "these, none",
        # unlike None ("the connection's current ones").
        credentials = {}
    with transaction.atomic():
        call = Call.objects.create(
            connection=connection,
            method=method,
            target=target,
            arguments_json=arguments_json,
            tool=Call.tool_for_rounds(_dump(tool)) if tool else None,
            credentials=credentials,
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
            **({"restarted_from": restarted_from.pk} if restarted_from else {}),
        )
        if with_call is not None:
            with_call(call)
    return call


def run_call(call: Call) -> Call:
    """Send a call :func:`create_call` made; returns it completed, waiting on a round, or
    failed."""
    send_call(call.pk)
    call.refresh_from_db()
    return call


def send_call(call_id: int) -> None:
    """Send a call's first request, once: only the caller that claims it (sets ``sent_at``)
    sends. A call claimed by a process that died while sending is failed by :func:`sweep`."""
    claimed = Call.objects.filter(
        pk=call_id, status=Call.Status.RUNNING, sent_at__isnull=True
    ).update(sent_at=timezone.now())
    if not claimed:
        return
    call = Call.objects.select_related("connection").get(pk=call_id)
    with io_loop.attached():
        _run(call, round=None, responses=None, state=None)


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
    with_call: Callable[[Call], None] | None = None,
    deliver_within: float | None = None,
) -> Call:
    """Create a call and send it (:func:`create_call`, then :func:`send_call`).

    Without ``deliver_within`` the request is sent here, and the call comes back completed,
    waiting on a round, or failed. With it (seconds), the request goes out on a delivery
    thread of this process (:mod:`.handoff`) once the call is committed, and this waits up
    to that long: a quick server's first round or result is there when it returns, a slow
    one's call is still running, and the person watches it on the call page instead of a
    page that hangs. A ``send_call`` task due :data:`HANDOFF_GRACE` later, written with the
    call, is the safety net should this process die before sending (:func:`send_call` lets
    only one of them send). With ``MRTRWEB_DELIVER_ON_ANSWER`` off, that task is due at once
    and a worker sends it.
    """
    hand_off = deliver_within is not None and _can_hand_off()
    sending: list[Future[None]] = []

    def and_then(call: Call) -> None:
        if with_call is not None:
            with_call(call)
        if hand_off:
            transaction.on_commit(lambda: sending.append(handoff.start_call(call.pk)))
            _enqueue("send_call", call.pk, at=timezone.now() + HANDOFF_GRACE)
        elif deliver_within is not None:
            # Not sent by this process (MRTRWEB_DELIVER_ON_ANSWER off): a worker sends it.
            _enqueue("send_call", call.pk)

    call = create_call(
        connection=connection,
        method=method,
        target=target,
        arguments=arguments,
        user=user,
        restarted_from=restarted_from,
        route_user=route_user,
        route_group=route_group,
        with_call=and_then,
    )
    if deliver_within is None:
        return run_call(call)
    if sending:
        handoff.wait_for(sending[0], deliver_within)
    call.refresh_from_db()
    return call


def submit_answers(
    round: Round,
    responses: Mapping[str, Mapping[str, Any]],
    user: Any,
    *,
    deliver_within: float | None = None,
) -> Round:
    """Store a person's answers and queue their delivery, once.

    With ``deliver_within`` (seconds), this process sends them at once on a delivery thread
    (:mod:`.handoff`) and waits up to that long for the outcome; the queued task is then only
    the safety net, due :data:`HANDOFF_GRACE` later, should this process die first. Without
    it (or with ``MRTRWEB_DELIVER_ON_ANSWER`` off, or a task backend that cannot defer), a
    task worker sends them.

    Raises :class:`AlreadyAnswered` if another post got there first.
    """
    if round.unsupported_reason:
        raise NotAnswerable(round.unsupported_reason)
    answers = {key: dict(value) for key, value in responses.items()}
    hand_off = deliver_within is not None and _can_hand_off()
    # The delivery started once committed (not when an outer transaction is still open).
    sending: list[Future[None]] = []
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
        if hand_off:
            # Registered before the event's hooks, so the delivery starts once the answers are
            # committed, while this thread tells the receivers.
            transaction.on_commit(lambda: sending.append(handoff.start(round.pk)))
        _record(round.call, "answered", round=round, actor=user, answers=answers)
        # In the same transaction as the answers (database queue): both are kept, or neither.
        if hand_off:
            _enqueue("deliver_unclaimed_round", round.pk, at=now + HANDOFF_GRACE)
        else:
            _queue(round.pk)
    if sending:
        handoff.wait_for(sending[0], deliver_within or 0.0)
    round.refresh_from_db()
    return round


# How long the safety-net task of an answer this process delivers itself waits before it
# tries (and, finding the round claimed, does nothing). Long enough for a busy process to
# claim it, short enough that an answer taken by a process that died is sent soon after.
HANDOFF_GRACE = timedelta(seconds=5)


def _can_hand_off() -> bool:
    from . import tasks  # imported here: the task module imports this one

    return bool(_setting("MRTRWEB_DELIVER_ON_ANSWER", True)) and (
        tasks.deliver_round.get_backend().supports_defer
    )


def _queue(round_id: int) -> None:
    _enqueue("deliver_round", round_id)


def deliver(round_id: int, *, unclaimed_only: bool = False) -> None:
    """Resubmit a submitted round. Only the caller that claims the round sends anything.

    ``unclaimed_only`` (an answer's safety net) sends only a round nobody has tried yet: once
    an attempt was made, its backoff, Retry-After and watchdog decide what happens next.
    """
    with transaction.atomic():
        now = timezone.now()
        rounds = Round.objects.filter(pk=round_id, status=Round.Status.SUBMITTED)
        if unclaimed_only:
            rounds = rounds.filter(attempts=0)
        claimed = rounds.update(
            status=Round.Status.DELIVERING,
            attempts=F("attempts") + 1,
            delivering_since=now,
            heard_at=None,
            next_attempt_at=None,
        )
        if not claimed:
            return
        round = Round.objects.select_related("call__connection").get(pk=round_id)
        # Committed with the claim: if this process dies while sending, the watchdog finds
        # the round still delivering and flags it (it never resends blindly).
        deadline = now + _stuck_after(round.call.connection)
        _enqueue("watch_delivery", round.pk, round.attempts, at=deadline, deferred_only=True)
    call = round.call
    # From a task worker or a delivery thread (no event loop of their own), the request goes
    # out on the process's shared loop, over pooled connections.
    with io_loop.attached():
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
            # A person's retry starts a fresh budget of automatic attempts.
            status=Round.Status.SUBMITTED,
            delivery_error="",
            attempts=0,
            next_attempt_at=None,
        ):
            raise EngineError("Only a round whose delivery failed can be retried.")
        _record(round.call, "delivery_retried", round=round, actor=user)
        _queue(round.pk)


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


def restart(call: Call, user: Any, *, deliver_within: float | None = None) -> Call:
    """Start the same call again (same arguments, exactly), e.g. after its state expired."""
    return start_call(
        deliver_within=deliver_within,
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


def expire(round: Round, actor: Any, *, notify: bool = False) -> None:
    """Mark a pending round expired without sending anything (its state is past its life).

    ``notify`` emails its assignees (the sweep does; an admin expiring it by hand does not).
    """
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
        _record(
            call,
            "expired",
            round=round,
            actor=actor,
            expires_at=round.expires_at.isoformat() if round.expires_at else None,
            swept=notify,
        )
        if notify:
            transaction.on_commit(lambda: notify_expired(round))


def expire_if_due(round_id: int, *, now: datetime | None = None) -> bool:
    """Expire a round whose state lifetime is over, if it is still open. True if it did."""
    now = now or timezone.now()
    round = (
        Round.objects.select_related("call__connection", "assigned_user", "assigned_group")
        .filter(
            pk=round_id,
            status__in=[Round.Status.PENDING, Round.Status.FAILED],
            expires_at__lte=now,
        )
        .first()
    )
    if round is None:
        return False
    try:
        expire(round, None, notify=True)
    except AlreadyAnswered:  # answered (or expired by another sweep) in the meantime
        return False
    return True


# -- what admins do with a round whose outcome is unknown ---------------------------------


def resend(round: Round, user: Any) -> None:
    """An admin's choice: send a flagged round's stored answers again."""
    with transaction.atomic():
        if not Round.objects.filter(pk=round.pk, status=Round.Status.UNKNOWN).update(
            status=Round.Status.SUBMITTED, attempts=0, next_attempt_at=None
        ):
            raise AlreadyAnswered("The round is no longer waiting for an admin.")
        _record(round.call, "resent", round=round, actor=user)
        _queue(round.pk)


def abandon_flagged(round: Round, user: Any) -> None:
    """An admin's choice: stop a flagged round; nothing is sent. The answers stay stored."""
    with transaction.atomic():
        if not Round.objects.filter(pk=round.pk, status=Round.Status.UNKNOWN).update(
            status=Round.Status.CANCELLED
        ):
            raise AlreadyAnswered("The round is no longer waiting for an admin.")
        call = round.call
        _set_call(
            call,
            status=Call.Status.CANCELLED,
            error="Abandoned by an admin after the outcome of its delivery became unknown "
            "(the server may or may not have acted on the answers).",
        )
        _record(call, "abandoned", round=round, actor=user, outcome_unknown=True)


# -- the watchdog and the sweep (tasks.py runs them) -------------------------------------


def check_delivery(round_id: int, attempt: int, *, now: datetime | None = None) -> bool:
    """If delivery attempt ``attempt`` of a round has not ended by its deadline, its sender
    died (or hangs): the request may have gone out, so its outcome is unknown. True when it
    was found stuck."""
    now = now or timezone.now()
    round = (
        Round.objects.select_related("call__connection")
        .filter(pk=round_id, status=Round.Status.DELIVERING, attempts=attempt)
        .first()
    )
    if round is None or round.delivering_since is None:
        return False
    alive = max(round.delivering_since, round.heard_at or round.delivering_since)
    deadline = alive + _stuck_after(round.call.connection)
    if now < deadline:
        with transaction.atomic():
            _enqueue("watch_delivery", round.pk, attempt, at=deadline, deferred_only=True)
        return False
    _outcome_unknown(
        round.call,
        round,
        OutcomeUnknown(
            f"Delivery attempt {attempt} did not finish by {deadline:%Y-%m-%d %H:%M:%S %Z}: "
            "the process sending it stopped, so the server may or may not have received it."
        ),
    )
    return True


def _call_stuck_after(connection: Connection) -> timedelta:
    """How long one request of a call may take before its sender is presumed dead: nothing
    notes a call's progress, so the longest progress may extend the answer deadline to."""
    grace = float(_setting("MRTRWEB_DELIVERY_GRACE", 60.0))
    longest = max(connection.answer_deadline, connection.answer_deadline_max)
    return timedelta(seconds=connection.connect_timeout + longest + grace)


def _watch_call(call: Call) -> None:
    _enqueue(
        "watch_call",
        call.pk,
        at=timezone.now() + _call_stuck_after(call.connection),
        deferred_only=True,
    )


def check_call(call_id: int, *, now: datetime | None = None) -> bool:
    """Fail a call still ``running`` past its deadline: the process sending its first request
    died or hangs (the client's own deadlines end every live exchange sooner). True when it
    was found stuck."""
    now = now or timezone.now()
    call = (
        Call.objects.select_related("connection")
        .filter(pk=call_id, status=Call.Status.RUNNING)
        .first()
    )
    if call is None:
        return False
    deadline = call.updated_at + _call_stuck_after(call.connection)
    if now < deadline:
        with transaction.atomic():
            _enqueue("watch_call", call.pk, at=deadline, deferred_only=True)
        return False
    message = (
        f"The call got no answer by {deadline:%Y-%m-%d %H:%M:%S %Z}: the process sending it "
        "stopped, so the server may or may not have run it. Start it again if it should run."
    )
    stuck = _fail_call(call, message, reason=message, stuck=True)
    if stuck:
        logger.warning("call %s: still running past its deadline, failed", call.pk)
    return stuck


def sweep(*, now: datetime | None = None, only_expire: bool = False) -> dict[str, int]:
    """The safety net behind the tasks: expire open rounds past their state lifetime,
    requeue answered rounds whose delivery task was lost, flag deliveries whose sender
    died, and fail calls left running by a sender that died. Safe to run any time, from any
    number of processes. ``only_expire`` does the first part alone (the expiry tasks)."""
    now = now or timezone.now()
    counts = {"expired": 0, "requeued": 0, "flagged": 0}
    due = Round.objects.filter(
        status__in=[Round.Status.PENDING, Round.Status.FAILED], expires_at__lte=now
    )
    for round_id in due.values_list("pk", flat=True):
        counts["expired"] += expire_if_due(round_id, now=now)
    if only_expire:
        return counts
    grace = timedelta(seconds=float(_setting("MRTRWEB_DELIVERY_GRACE", 60.0)))
    stranded = Round.objects.filter(status=Round.Status.SUBMITTED).filter(
        Q(next_attempt_at__lte=now - grace)
        | Q(next_attempt_at__isnull=True, answered_at__lte=now - grace)
    )
    for round_id in stranded.values_list("pk", flat=True):
        # A second delivery task is harmless: only one of them can claim the round.
        with transaction.atomic():
            _enqueue("deliver_round", round_id)
        counts["requeued"] += 1
    delivering = Round.objects.filter(status=Round.Status.DELIVERING)
    for round_id, attempt in delivering.values_list("pk", "attempts"):
        counts["flagged"] += check_delivery(round_id, attempt, now=now)
    running = Call.objects.filter(status=Call.Status.RUNNING)
    # Started and never sent (their process died, and their send_call task is gone): sent
    # now. A second task is harmless: only one sender can claim the call.
    unsent = running.filter(sent_at__isnull=True, created_at__lte=now - grace)
    for call_id in unsent.values_list("pk", flat=True):
        with transaction.atomic():
            _enqueue("send_call", call_id)
        counts["requeued"] += 1
    counts["failed"] = 0
    for call_id in running.filter(sent_at__isnull=False).values_list("pk", flat=True):
        counts["failed"] += check_call(call_id, now=now)
    return counts
