"""The engine's edge: one request of a call (or a round's answers) sent, and what came back
settled.

State-only rounds are retried here with backoff; no person ever sees them. Whatever goes wrong
here (a bug, an answer that cannot be stored) ends in a state a person can act on, never in an
exception for the page or a call left running. The network part runs outside any
transaction.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Mapping
from contextlib import nullcontext
from typing import Any

import mcp_types
from asgiref.sync import async_to_sync
from django.db import DEFAULT_DB_ALIAS, connections, transaction

from mrtrweb.authorizations.credentials import DatabaseAuthenticator, authenticator_for
from mrtrweb.mcp import (
    AuthorizationRequired,
    ConnectionSettings,
    InvalidRequestState,
    LegacyServer,
    MCPClient,
    MCPError,
    NotDelivered,
    OutcomeUnknown,
    ProtocolError,
    ResponseTooLarge,
    UnsupportedInputRequest,
    io_loop,
)
from mrtrweb.mcp.rounds import state_only_backoff

from ..models import Call, Round, state_sha256
from .counting import count_round
from .outcomes import (
    complete,
    delivered,
    delivery_failed,
    fail_call,
    not_delivered,
    outcome_unknown,
    state_rejected,
    wait_for_authorization,
)
from .parking import park
from .progress import on_progress
from .renewal_replay import Send, renew_answered, renew_parked
from .resuming import resume_authorized
from .trail import dump, record
from .transitions import this_attempt

__all__ = ["Exchanged", "renew", "run", "settle_failure", "settle_result"]

logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class Exchanged:
    """How one exchange ended, for the caller that sent it.

    ``call`` is set only when the exchange's own transaction completed the call or parked its
    next round: it (and the ``round`` whose answers it delivered, if any) are then the rows as
    that transaction stored them, their related rows as read at the claim. A process that
    waited for the exchange shows them without reading them again; any other ending is read
    back.
    """

    # The server speaks the handshake era (it refused the first request as a 2026-07-28
    # one, so nothing ran): the caller starts the call's conversation instead.
    legacy: bool = False
    call: Call | None = None
    round: Round | None = None


_UNSETTLED = Exchanged()


def run(call: Call, *, round: Round | None, responses: Any, state: str | None) -> Exchanged:
    """Send the call (``round`` None) or a round's answers, and record what came back."""
    # The first request's watchdog was committed with its claim (starting.send_call); a
    # round's, with its claim (resubmitting.resubmit).
    try:
        return _exchange(call, round=round, responses=responses, state=state)
    except Exception as exc:
        logger.exception("call %s: the exchange with the server broke in mrtrweb", call.pk)
        _crashed(call, round, exc)
    return _UNSETTLED


async def _send(
    call: Call,
    responses: Mapping[str, Any] | None,
    state: str | None,
    round: Round | None = None,
    authenticator: DatabaseAuthenticator | None = None,
) -> Any:
    """The server's answer and the HTTP status it came with (for the audit trail)."""
    progress = on_progress(call, round)
    settings = call.connection.client_settings(call.credentials)
    if authenticator is not None:
        settings = dataclasses.replace(settings, authenticator=authenticator)
    return await _send_modern(call, settings, responses, state, progress)


async def _send_modern(
    call: Call,
    settings: ConnectionSettings,
    responses: Mapping[str, Any] | None,
    state: str | None,
    progress: Any,
) -> Any:
    async with MCPClient(settings) as client:
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


def _sender(call: Call, authenticator: DatabaseAuthenticator | None) -> Send:
    """The call's request sent again (new id, same arguments), for the renewal policy."""

    def send(responses: Mapping[str, Any] | None, state: str | None) -> Any:
        _release_pooled_connection()
        return async_to_sync(_send)(call, responses, state, None, authenticator)[0]

    return send


def _authenticator(call: Call) -> DatabaseAuthenticator | None:
    connection = call.connection
    return authenticator_for(connection, call.started_by) if connection.uses_oauth else None


def renew(round_id: int) -> None:
    """The renewal policy's task (``renew_round``): issue the call of a pending round whose
    state died again and move the round onto the fresh state (engine.renewal_replay)."""
    round = (
        Round.objects.select_related("call__connection", "call__started_by")
        .filter(pk=round_id, status=Round.Status.PENDING)
        .first()
    )
    if round is None:
        return
    with io_loop.attached():
        try:
            renew_parked(round, _sender(round.call, _authenticator(round.call)))
        except Exception:
            # Left pending: the claim's deadline passes and the expiry task tries again.
            logger.exception("call %s: renewing round %s broke in mrtrweb", round.call_id, round.pk)


def _crashed(call: Call, round: Round | None, exc: Exception) -> None:
    """Settle what an unexpected exception interrupted (see :func:`run`)."""
    message = f"mrtrweb could not complete the exchange with the server ({type(exc).__name__}: "
    message += f"{str(exc)[:500]})."
    if round is not None:
        if Round.objects.filter(
            pk=round.pk, status=Round.Status.DELIVERING, **this_attempt(round)
        ).exists():
            # Sent, perhaps acted on, and the answer lost here: an admin decides.
            outcome_unknown(call, round, OutcomeUnknown(message))
            return
        if not Round.objects.filter(
            pk=round.pk, status=Round.Status.DELIVERED, **this_attempt(round)
        ).exists():
            return  # a newer attempt owns the round now; its outcome counts
    # The first request, or the retries that followed this attempt's delivered round.
    fail_call(call, message, reason=f"{type(exc).__name__}: {str(exc)[:500]}")


def settle_failure(
    call: Call,
    round: Round | None,
    exc: MCPError,
    authenticator: DatabaseAuthenticator | None,
) -> None:
    """Settle a request the MCP client raised ``exc`` for (the call, or ``round``)."""
    if isinstance(exc, AuthorizationRequired):
        # Nothing ran on the server. When a person can cure it by connecting an account,
        # the request waits for them, answers kept; otherwise (a static header refused,
        # client credentials refused) it is refused as before.
        reason = authenticator.refused(exc) if authenticator is not None else ""
        if authenticator is not None and reason:
            wait_for_authorization(call, round, reason, exc)
            if authenticator.connected_now():
                # Connected again while this request was refused: the signal came before
                # the wait was recorded, so it is resumed here (once: the claim decides).
                resume_authorized(call.connection, authenticator.user)
        else:
            delivery_failed(call, round, exc)
    elif isinstance(exc, InvalidRequestState):
        state_rejected(call, round, exc)
    elif isinstance(exc, UnsupportedInputRequest):
        if round is None or delivered(round):
            park(
                call,
                exc.raw_result.get("inputRequests") or {},
                exc.request_state,
                unsupported=str(exc),
            )
    elif isinstance(exc, NotDelivered):
        not_delivered(call, round, exc)
    elif isinstance(exc, (OutcomeUnknown, ProtocolError, ResponseTooLarge)):
        # The request left and what came back (if anything) cannot be trusted: the server
        # may have acted on it.
        outcome_unknown(call, round, exc)
    else:
        # The server answered and refused (JSON-RPC error, 4xx, credentials): nothing ran.
        delivery_failed(call, round, exc)


def settle_result(call: Call, result: Any) -> None:
    """Store a call's result (inside the caller's transaction), unless the call finished
    meanwhile (the watchdog failed it, its round was lost): then it is ignored."""
    if Call.objects.filter(pk=call.pk, status__in=Call.FINISHED).exists():
        record(call, "late_answer_ignored")
        return
    complete(call, result)


def _exchange(call: Call, *, round: Round | None, responses: Any, state: str | None) -> Exchanged:
    connection = call.connection
    # Every request of the call goes with the caller's account (or the connection's), never
    # with that of whoever answered a round: servers bind a round's state to the caller.
    authenticator = (
        authenticator_for(connection, call.started_by) if connection.uses_oauth else None
    )
    waits = state_only_backoff()
    renewed = False  # the renewal policy renews a refused state once per attempt
    answered: Round | None = None  # the round delivered, kept through state-only retries
    while True:
        _release_pooled_connection()
        try:
            with authenticator.primed() if authenticator is not None else nullcontext():
                result, http_status = async_to_sync(_send)(
                    call, responses, state, round, authenticator
                )
        except LegacyServer as exc:
            if round is None:
                # Refused as a 2026-07-28 request, so nothing ran: the handshake era instead.
                return Exchanged(legacy=True)
            settle_failure(call, round, exc, authenticator)
            return _UNSETTLED
        except InvalidRequestState as exc:
            # The renewal policy: issue the call again, then send the answers to the new state.
            renewal = None
            if round is not None and not renewed:
                renewed = True
                renewal = renew_answered(call, round, _sender(call, authenticator))
            if renewal is None:
                state_rejected(call, round, exc)
                return _UNSETTLED
            if renewal.kind != "renewed":
                return _UNSETTLED
            state = renewal.state
            continue
        except MCPError as exc:
            settle_failure(call, round, exc, authenticator)
            return _UNSETTLED
        # The round closed and what came back stored in one transaction: one commit, and the
        # events' receivers run after the result is stored, not before.
        with transaction.atomic():
            # The call's own request (no round's answers): the watchdog may have failed the
            # call while its answer was on the way.
            own = round is None
            if round is not None:
                # The round came from resubmit's claim (the only caller with a round).
                if not delivered(round, http_status=http_status, read_at_claim=True):
                    return _UNSETTLED
                answered, round = round, None
            if not isinstance(result, mcp_types.InputRequiredResult):
                if own and Call.objects.filter(pk=call.pk, status__in=Call.FINISHED).exists():
                    # The watchdog failed the call while its answer was on the way: it stays so.
                    record(call, "late_answer_ignored")
                    return _UNSETTLED
                complete(call, result)
                return _settled(call, answered, renewed)
            if not count_round(call, own=own, asks=bool(result.input_requests)):
                return _UNSETTLED
            if result.input_requests:
                park(
                    call,
                    {key: dump(request) for key, request in result.input_requests.items()},
                    result.request_state,
                    waiting=True,
                )
                return _settled(call, answered, renewed)
            # A state-only round: retry at once with the echoed state, backing off a little.
            record(
                call, "state_only_retry", request_state_sha256=state_sha256(result.request_state)
            )
        time.sleep(next(waits))
        responses, state = None, result.request_state


def _settled(call: Call, answered: Round | None, renewed: bool) -> Exchanged:
    """The exchange stored the call's outcome: the objects are the rows as stored, unless a
    renewal moved the round onto a fresh state on the way (engine.renewal_replay writes rows this
    exchange did not read back), when the caller reads them."""
    if renewed:
        return _UNSETTLED
    return Exchanged(call=call, round=answered)


def _release_pooled_connection() -> None:
    """Give a pooled database connection back before waiting on the server: a tool may run
    for minutes, and the pool holds ten a process; the next query takes one again."""
    db = connections[DEFAULT_DB_ALIAS]
    if not db.in_atomic_block and (db.settings_dict.get("OPTIONS") or {}).get("pool"):
        db.close()
