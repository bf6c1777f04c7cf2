"""The JSON API under /api/v1/. Thin: parse, authorise (the pages' access rules), ask the
engine, serialize. Anything a token's user may not see is a 404, as on the pages."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import IntegrityError, OperationalError
from django.http import HttpRequest, HttpResponse
from django.urls import reverse

from mrtrweb import webhooks
from mrtrweb.calls import engine
from mrtrweb.calls.access import can_answer, routed_to, visible_calls, visible_rounds
from mrtrweb.calls.models import Call, Round
from mrtrweb.servers.catalog import ensure_catalog
from mrtrweb.servers.exposure import may_start, sees_whole_catalog, startable_connections
from mrtrweb.servers.models import Connection

from . import idempotency
from . import servers as server_ops
from .answers import validated_responses
from .auth import api_view, json_response
from .models import ApiToken
from .problems import ApiError, not_found, parse_body
from .schemas import (
    ProblemField,
    RoundList,
    ServerList,
    StartCall,
    SubmitResponses,
)
from .serialize import call_out, round_out, server_out

logger = logging.getLogger(__name__)

MAX_WAIT_SECONDS = 60.0
# How often a waiting request looks at the call again: short enough to feel immediate, long
# enough that a hundred waiting programs cost a few cheap queries a second.
POLL_SECONDS = 0.25
ROUND_LIST_LIMIT = 200
# Seconds a program waits before sending again a start refused because the database was busy.
BUSY_RETRY_AFTER = 2


MAX_ID = 2**63 - 1


def _id(raw: str, what: str) -> int:
    """A path id as a database id; anything else (``-1``, ``abc``, 2**64) is simply absent."""
    if not (raw.isascii() and raw.isdigit()) or not 1 <= int(raw) <= MAX_ID:
        raise not_found(what)
    return int(raw)


def _field_error(field: str, detail: str, status: int = 422) -> ApiError:
    return ApiError(
        status,
        detail,
        kind="invalid-body",
        errors=[ProblemField(detail=detail, pointer=f"/{field}")],
    )


def _query_error(parameter: str, detail: str) -> ApiError:
    return ApiError(
        422,
        detail,
        kind="invalid-parameter",
        errors=[ProblemField(detail=detail, parameter=parameter)],
    )


# -- calls -----------------------------------------------------------------------------------


@api_view("POST")
def calls(request: HttpRequest, token: ApiToken) -> HttpResponse:
    key = idempotency.key_of(request)
    body = parse_body(request, StartCall)
    fingerprint = idempotency.fingerprint(body) if key is not None else ""
    try:
        if key is not None and (earlier := idempotency.find(token, key)) is not None:
            return _call_started(request, idempotency.call_for(earlier, fingerprint), status=200)
        call = _create_call(token, body, key, fingerprint)
    except IntegrityError:
        # A concurrent request with the same key committed first, its call with it.
        earlier = idempotency.find(token, key) if key is not None else None
        if earlier is None:
            raise
        return _call_started(request, idempotency.call_for(earlier, fingerprint), status=200)
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
    return _call_started(request, engine.run_call(call), status=201)


def _create_call(token: ApiToken, body: StartCall, key: str | None, fingerprint: str) -> Call:
    """Check the request as the start page would, then create the call (not sent yet)."""
    user = token.user
    connection = startable_connections(user).filter(name=body.server).first()
    if connection is None:
        raise _field_error("server", "No server of this name that you may use.")
    target = _target(body)
    route_user, route_group = _routing(body)
    if body.webhook is not None:
        _check_webhook(body.webhook)
    _check_startable(user, connection, body.method, target)

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
        )
    except webhooks.InvalidWebhookURL as exc:
        raise _field_error("webhook", f"The webhook cannot be used: {exc}.") from None


def _call_started(request: HttpRequest, call: Call, *, status: int) -> HttpResponse:
    """201 for the call this request started; 200 for the call an earlier request with the
    same Idempotency-Key started (``Idempotent-Replayed: true``), as it is now."""
    response = json_response(call_out(request, call), status=status)
    response["Location"] = request.build_absolute_uri(reverse("api:call", args=[call.pk]))
    if status == 200:
        response["Idempotent-Replayed"] = "true"
    return response


def _target(body: StartCall) -> str:
    if body.method == Call.Method.RESOURCE:
        if body.name is not None:
            raise _field_error("name", "resources/read takes a uri, not a name.")
        if body.arguments:
            raise _field_error("arguments", "resources/read takes no arguments.")
        if body.uri is None:
            raise _field_error("uri", "resources/read needs the resource's uri.")
        return body.uri
    if body.uri is not None:
        raise _field_error("uri", f"{body.method} takes a name, not a uri.")
    if body.name is None:
        raise _field_error("name", f"{body.method} needs the name of the tool or prompt.")
    return body.name


def _routing(body: StartCall) -> tuple[Any, Any]:
    if body.assignee is not None and body.group is not None:
        raise _field_error("group", "Name an assignee or a group, not both.")
    if body.assignee is not None:
        User = get_user_model()
        user = User.objects.filter(**{User.USERNAME_FIELD: body.assignee}, is_active=True).first()
        if user is None:
            raise _field_error("assignee", "No active user has this username.")
        return user, None
    if body.group is not None:
        group = Group.objects.filter(name=body.group).first()
        if group is None:
            raise _field_error("group", "No group has this name.")
        return None, group
    return None, None


def _check_webhook(url: str) -> None:
    """The webhooks app's rules, which parse the URL as its sender will (a URL it could not
    use, or an address in an odd spelling, is refused here with the reason)."""
    try:
        webhooks.check_url(url)
    except webhooks.InvalidWebhookURL as exc:
        raise _field_error("webhook", f"The webhook cannot be used: {exc}.") from None


def _check_startable(user: Any, connection: Connection, method: str, target: str) -> None:
    """The start page's rules: end users only exposed tools; prompts and resources only for
    those who see the whole catalog; tools and prompts as the (fresh) catalog lists them."""
    if method != Call.Method.TOOL and not sees_whole_catalog(user):
        raise _field_error("method", "Only operators and admins get prompts or read resources.")
    if method == Call.Method.RESOURCE:
        return  # any URI: resource templates make the list open-ended; the server decides
    report = ensure_catalog(connection)
    catalog = connection.catalog or {}
    listing = "tools" if method == Call.Method.TOOL else "prompts"
    names = {item.get("name") for item in catalog.get(listing) or [] if isinstance(item, dict)}
    if target not in names:
        if report is not None and not report.ok and not catalog:
            raise ApiError(502, "The server's catalog could not be listed.", kind="unreachable")
        raise _field_error("name", f"The server offers no {listing[:-1]} of this name to you.")
    if method == Call.Method.TOOL and not may_start(user, connection, target):
        raise _field_error("name", "The server offers no tool of this name to you.")


def _find_call(user: Any, pk: int) -> Call | None:
    return visible_calls(user).filter(pk=pk).first()


def _fingerprint(pk: int) -> tuple[Any, ...]:
    """What a waiting request watches: the call's status and each of its rounds'."""
    status = Call.objects.filter(pk=pk).values_list("status", flat=True).first()
    rounds = tuple(Round.objects.filter(call_id=pk).order_by("index").values_list("id", "status"))
    return status, rounds


def _wait_seconds(request: HttpRequest) -> float:
    raw = request.GET.get("wait")
    if raw is None or raw == "":
        return 0.0
    try:
        seconds = float(raw)
    except ValueError:
        raise _query_error("wait", "wait is a number of seconds, 0 to 60.") from None
    if not 0 <= seconds <= MAX_WAIT_SECONDS:
        raise _query_error("wait", "wait is a number of seconds, 0 to 60.")
    return seconds


@api_view("GET")
async def call_detail(request: HttpRequest, token: ApiToken, pk: str) -> HttpResponse:
    """The call; with ``?wait=N``, held (without a worker thread) until it changes or N s pass."""
    call_id = _id(pk, "No call")
    seconds = _wait_seconds(request)
    call = await sync_to_async(_find_call)(token.user, call_id)
    if call is None:
        raise not_found("No call")
    if seconds and not call.is_finished:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        before = await sync_to_async(_fingerprint)(call_id)
        while (left := deadline - loop.time()) > 0:
            await asyncio.sleep(min(POLL_SECONDS, left))
            if await sync_to_async(_fingerprint)(call_id) != before:
                break
        call = await sync_to_async(_find_call)(token.user, call_id)
        if call is None:  # pragma: no cover - deleted while waiting
            raise not_found("No call")
    out = await sync_to_async(call_out)(request, call)
    return json_response(out)


@api_view("POST")
def call_cancel(request: HttpRequest, token: ApiToken, pk: str) -> HttpResponse:
    """Cancel the call's open round: the server is told ``cancel`` for every request (a round
    nobody can answer is abandoned). Whoever may answer the round, or started the call, may."""
    user = token.user
    call = _find_call(user, _id(pk, "No call"))
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
    try:
        if open_round.status == Round.Status.FAILED:
            engine.abandon(open_round, user)
        else:
            engine.cancel_round(open_round, user)
    except engine.EngineError as exc:
        raise ApiError(409, str(exc), kind="not-cancellable") from None
    call.refresh_from_db()
    return json_response(call_out(request, call))


# -- rounds ----------------------------------------------------------------------------------


@api_view("GET")
def rounds(request: HttpRequest, token: ApiToken) -> HttpResponse:
    """Rounds routed to the token's user (theirs, or their groups' that nobody else claimed),
    newest first: the inbox, as JSON."""
    status = request.GET.get("status", Round.Status.PENDING)
    if status not in Round.Status.values:
        raise _query_error("status", f"status is one of {', '.join(Round.Status.values)}.")
    try:
        limit = int(request.GET.get("limit", 50))
    except ValueError:
        raise _query_error("limit", f"limit is a whole number, 1 to {ROUND_LIST_LIMIT}.") from None
    if not 1 <= limit <= ROUND_LIST_LIMIT:
        raise _query_error("limit", f"limit is a whole number, 1 to {ROUND_LIST_LIMIT}.")
    found = (
        Round.objects.filter(status=status)
        .filter(routed_to(token.user))
        .select_related("assigned_user", "assigned_group", "claimed_by", "answered_by")
        .defer("request_state")
        .order_by("-created_at", "-id")[:limit]
    )
    return json_response(RoundList(rounds=[round_out(request, r) for r in found]))


@api_view("POST")
def round_responses(request: HttpRequest, token: ApiToken, pk: str) -> HttpResponse:
    user = token.user
    round_id = _id(pk, "No round")
    round = visible_rounds(user).filter(pk=round_id).first()
    if round is None or not can_answer(user, round):
        raise not_found("No round")
    body = parse_body(request, SubmitResponses)
    if not round.is_pending:
        raise _already_answered(round)
    responses = validated_responses(round, body.responses)
    try:
        # Sent at once by this process; the caller follows the outcome with GET ...?wait=.
        engine.answer(round, responses, user, deliver_within=0)
    except engine.AlreadyAnswered:
        round.refresh_from_db()
        raise _already_answered(round) from None
    except engine.NotAnswerable as exc:
        raise ApiError(409, str(exc), kind="unanswerable") from None
    round = visible_rounds(user).get(pk=round_id)
    return json_response(round_out(request, round), status=202)


def _already_answered(round: Round) -> ApiError:
    return ApiError(
        409,
        f"The round is no longer waiting for an answer (it is {round.status}).",
        kind="already-answered",
    )


# -- servers ---------------------------------------------------------------------------------


@api_view("GET", "POST")
def servers(request: HttpRequest, token: ApiToken) -> HttpResponse:
    user = token.user
    if request.method == "POST":
        return server_ops.create(request, user)
    listed = [server_out(user, c) for c in startable_connections(user)]
    return json_response(ServerList(servers=listed))


@api_view("GET", "PATCH")
def server_detail(request: HttpRequest, token: ApiToken, name: str) -> HttpResponse:
    if request.method == "PATCH":
        return server_ops.update(request, token.user, name)
    return server_ops.show(request, token.user, name)


@api_view("POST")
def server_test(request: HttpRequest, token: ApiToken, name: str) -> HttpResponse:
    return server_ops.test(request, token.user, name)
