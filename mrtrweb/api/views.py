"""The JSON API under /api/v1/. Thin: authorise (the pages' access rules), ask the engine,
serialize. Anything a token's user may not see is a 404, as on the pages.

Each view is a django-ninja operation: its signature (path, query and header parameters, the
body's model) and its ``response`` models are what is validated and what the OpenAPI document
says; the summary and description are the document's words.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Annotated, Any, Literal

from asgiref.sync import sync_to_async
from django.db import IntegrityError, OperationalError
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from ninja import Query, Status
from pydantic import BeforeValidator, Field

from mrtrweb import webhooks
from mrtrweb.calls import engine
from mrtrweb.calls.access import (
    by_key,
    can_answer,
    routed_to,
    sees_call_at_once,
    shown_to,
    visible_call,
    visible_rounds,
    waiting_for,
)
from mrtrweb.calls.models import Call, Round
from mrtrweb.calls.pages import watching
from mrtrweb.servers.exposure import offered_connection, startable_connections

from . import idempotency, start_checks
from .answers import validated_responses
from .models import ApiToken
from .problems import ApiError, not_found
from .schemas import (
    CallOut,
    RoundList,
    RoundOut,
    StartCall,
    SubmitResponses,
)
from .serialize import call_out, round_out
from .service import api, problems, says, token_of

logger = logging.getLogger(__name__)

MAX_WAIT_SECONDS = 60.0
ROUND_LIST_LIMIT = 200
# Seconds a program waits before sending again a start refused because the database was busy.
BUSY_RETRY_AFTER = 2


MAX_ID = 2**63 - 1

# A path id that is not a database id (``-1``, ``abc``, 2**64) is a 404 (service.py).
Id = Annotated[int, Field(ge=1, le=MAX_ID)]


def _blank_is_zero(value: Any) -> Any:
    return 0.0 if value == "" else value


# ``?wait=`` (empty) is no wait, as is no ``wait`` at all.
Wait = Annotated[float, BeforeValidator(_blank_is_zero)]
WAIT = Query(0.0, ge=0, le=MAX_WAIT_SECONDS, allow_inf_nan=False)
# Taken from the model at runtime, which a type checker cannot follow: for it, text.
if TYPE_CHECKING:
    RoundStatusFilter = str
else:
    RoundStatusFilter = Literal[tuple(Round.Status.values)]
LIMIT = Query(50, ge=1, le=ROUND_LIST_LIMIT)

LOCATION = {"description": "The call's address", "schema": {"type": "string"}}


# -- calls -----------------------------------------------------------------------------------


@api.post(
    "/calls",
    url_name="calls",
    operation_id="startCall",
    by_alias=True,
    summary="Start a call",
    description=(
        "Start a tool call, prompt or resource read on a server the token's user may use. "
        "The call runs until it completes, fails or waits for a person; the answer is the "
        "call in that state. With `webhook`, that URL is told of every new pending round and "
        "of the finished call."
    ),
    response={201: CallOut, 200: CallOut, **problems(400, 403, 413, 415, 422, 502, 503)},
    openapi_extra={
        "responses": {
            201: {
                "description": "The call, as it stands after its first run.",
                "headers": {"Location": LOCATION},
            },
            200: {
                "description": (
                    "The call an earlier request with the same Idempotency-Key and body "
                    "started, as it is now (`Idempotent-Replayed: true`)."
                ),
                "headers": {
                    "Location": LOCATION,
                    "Idempotent-Replayed": {"schema": {"type": "string", "enum": ["true"]}},
                },
            },
        }
    },
)
def calls(
    request: HttpRequest,
    response: HttpResponse,
    body: StartCall,
    key: idempotency.Key = idempotency.PARAMETER,
) -> Status:
    token = token_of(request)
    fingerprint = idempotency.fingerprint(body) if key is not None else ""
    try:
        if key is not None and (earlier := idempotency.find(token, key)) is not None:
            return _call_started(
                request, response, idempotency.call_for(earlier, fingerprint), status=200
            )
        call = _create_call(token, body, key, fingerprint)
    except IntegrityError:
        # A concurrent request with the same key committed first, its call with it.
        earlier = idempotency.find(token, key) if key is not None else None
        if earlier is None:
            raise
        return _call_started(
            request, response, idempotency.call_for(earlier, fingerprint), status=200
        )
    except OperationalError as exc:
        # SQLite's lock timeout ran out (or the database went away) before the call was
        # committed: nothing exists, so the very same request may be sent again.
        logger.warning("POST /calls: nothing started, the database is busy (%s)", exc)
        raise ApiError(
            503,
            "The database is busy; nothing was started. Send the same request again.",
            kind="busy",
            headers={"Retry-After": str(BUSY_RETRY_AFTER)},
        ) from None
    return _call_started(request, response, engine.run_call(call), status=201)


def _create_call(token: ApiToken, body: StartCall, key: str | None, fingerprint: str) -> Call:
    """Check the request as the start page would (``start_checks``), then create the call (not
    sent yet)."""
    user = token.user
    connection = offered_connection(user, body.server)
    if connection is None:
        if startable_connections(user).filter(name=body.server).exists():
            # As on the start pages: an end user meets no server an operator has not tested.
            raise start_checks.field_error(
                "server", "This server is not ready yet: an operator has to test it first."
            )
        raise start_checks.field_error("server", "No server of this name that you may use.")
    target = start_checks.target(body)
    route_user, route_group = start_checks.routing(body)
    if body.webhook is not None:
        start_checks.check_webhook(body.webhook)
    start_checks.check_startable(user, connection, body.method, target)
    policy = start_checks.policy(user, connection, body)

    def with_call(call: Call) -> None:
        # In the transaction that creates the call: all of it is stored, or nothing.
        if body.webhook is not None:
            webhooks.subscribe(call, body.webhook, token)
        if key is not None:
            idempotency.remember(token, key, fingerprint, call)

    try:
        return engine.create_call(
            connection=connection,
            method=body.method,
            target=target,
            arguments=body.arguments if body.method != Call.Method.RESOURCE else None,
            user=user,
            route_user=route_user,
            route_group=route_group,
            with_call=with_call,
            policy=policy,
        )
    except webhooks.InvalidWebhookURL as exc:
        raise start_checks.field_error("webhook", f"The webhook cannot be used: {exc}.") from None


def _call_started(
    request: HttpRequest, response: HttpResponse, call: Call, *, status: int
) -> Status:
    """201 for the call this request started; 200 for the call an earlier request with the
    same Idempotency-Key started (``Idempotent-Replayed: true``), as it is now."""
    response["Location"] = request.build_absolute_uri(reverse("api:call", args=[call.pk]))
    if status == 200:
        response["Idempotent-Replayed"] = "true"
    return Status(status, call_out(request, call))


@api.get(
    "/calls/{id}",
    url_name="call",
    operation_id="getCall",
    by_alias=True,
    summary="Get a call",
    description=(
        "The call, its rounds and, once finished, its result. With `wait`, the request is "
        "held until the call's or a round's status changes, or `wait` seconds pass (a "
        "finished call answers at once)."
    ),
    response={200: CallOut, **problems(404, 422)},
    openapi_extra=says(200, "The call."),
)
async def call_detail(request: HttpRequest, id: Id, wait: Wait = WAIT) -> CallOut:
    """The call; with ``?wait=N``, held (without a worker thread) until it changes or N s pass."""
    token = token_of(request)
    call_id, seconds = id, wait
    call = await sync_to_async(visible_call)(token.user, call_id)
    if call is None:
        raise not_found("No call")
    if seconds and not call.is_finished:
        await watching.hold(call_id, seconds, lambda first, now: now != first)
        call = await sync_to_async(visible_call)(token.user, call_id)
        if call is None:  # pragma: no cover - deleted while waiting
            raise not_found("No call")
    return await sync_to_async(call_out)(request, call)


@api.post(
    "/calls/{id}/cancel",
    url_name="cancel",
    operation_id="cancelCall",
    by_alias=True,
    summary="Cancel a call",
    description=(
        "Answer the call's open round with `cancel` for every request (a round nobody can "
        "answer is abandoned). For whoever may answer the round or started the call."
    ),
    response={200: CallOut, **problems(404, 409)},
    openapi_extra=says(200, "The call, its cancel on its way."),
)
def call_cancel(request: HttpRequest, id: Id) -> CallOut:
    """Cancel the call's open round: the server is told ``cancel`` for every request (a round
    nobody can answer is abandoned). Whoever may answer the round, or started the call, may."""
    user = token_of(request).user
    call = visible_call(user, id)
    if call is None:
        raise not_found("No call")
    if call.is_finished:
        raise ApiError(409, f"The call is already {call.status}.", kind="finished")
    open_round = (
        call.rounds.filter(status__in=[Round.Status.PENDING, Round.Status.FAILED])
        .order_by("-index")
        .first()
    )
    if open_round is None:
        raise ApiError(
            409,
            "Nothing to cancel now: the call is running or its answers are being delivered.",
            kind="not-cancellable",
        )
    if not (can_answer(user, open_round) or call.started_by_id == user.pk):
        raise not_found("No call")
    if open_round.split and not sees_call_at_once(user, call.started_by_id):
        # Cancelling refuses every part at once: the caller's or an admin's to do, never
        # one part's person's (docs/approval-policies.md, "Split rounds").
        raise ApiError(
            409,
            f"Round {open_round.index} is split between people: cancel your part "
            f"(POST /rounds/{open_round.pk}/responses with the action cancel); only the "
            "caller or an admin cancels the whole call.",
            kind="not-cancellable",
        )
    try:
        if open_round.status == Round.Status.FAILED:
            engine.abandon(open_round, user)
        else:
            engine.cancel_round(open_round, user)
    except engine.EngineError as exc:
        raise ApiError(409, str(exc), kind="not-cancellable") from None
    call.refresh_from_db()
    return call_out(request, call)


# -- rounds ----------------------------------------------------------------------------------


@api.get(
    "/rounds",
    url_name="rounds",
    operation_id="listRounds",
    by_alias=True,
    summary="List rounds routed to me",
    description=(
        "Rounds routed to the token's user: assigned to them, or to one of their groups and "
        "not claimed by someone else. Newest first."
    ),
    response={200: RoundList, **problems(422)},
    openapi_extra=says(200, "The rounds."),
)
def rounds(
    request: HttpRequest, status: RoundStatusFilter = "pending", limit: int = LIMIT
) -> RoundList:
    """Rounds routed to the token's user (theirs, or their groups' that nobody else claimed),
    newest first: the inbox, as JSON."""
    user = token_of(request).user
    found = (
        Round.objects.filter(status=status)
        # Pending: a split round only while a part of theirs waits.
        .filter(waiting_for(user) if status == Round.Status.PENDING else routed_to(user))
        .select_related("assigned_user", "assigned_group", "claimed_by", "answered_by")
        .defer("request_state")
        .order_by("-created_at", "-id")[:limit]
    )
    return RoundList(rounds=[round_out(request, r) for r in found])


@api.post(
    "/rounds/{id}/responses",
    url_name="responses",
    operation_id="answerRound",
    by_alias=True,
    summary="Answer a round",
    description=(
        "One answer per key of the round's inputRequests, validated exactly as the round's "
        "page validates a person's. Delivery to the server follows."
    ),
    response={202: RoundOut, **problems(400, 403, 404, 409, 413, 415, 422)},
    openapi_extra=says(202, "Accepted; the answers are being delivered."),
)
def round_responses(request: HttpRequest, id: Id, body: SubmitResponses) -> Status:
    user = token_of(request).user
    round_id = id
    round = by_key(visible_rounds(user), round_id)
    if round is None or not can_answer(user, round):
        raise not_found("No round")
    round = shown_to(user, round)  # a split round: the keys of the user's part only
    if not round.is_pending:
        raise _already_answered(round)
    responses = validated_responses(round, body.responses)
    try:
        # Sent at once by this process; the caller follows the outcome with GET ...?wait=.
        engine.answer(round, responses, user, deliver_within=0, comment=body.comment)
    except engine.AlreadyAnswered:
        round.refresh_from_db()
        raise _already_answered(round) from None
    except engine.NotAnswerable as exc:
        raise ApiError(409, str(exc), kind="unanswerable") from None
    except engine.NotEligible as exc:
        raise ApiError(403, str(exc), kind="not-eligible") from None
    round = visible_rounds(user).get(pk=round_id)
    return Status(202, round_out(request, round))


def _already_answered(round: Round) -> ApiError:
    return ApiError(
        409,
        f"The round is no longer waiting for an answer (it is {round.status}).",
        kind="already-answered",
    )
