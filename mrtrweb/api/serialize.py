"""Calls, rounds and connections as the API's response models.

A round's ``requestState`` is never part of anything built here: only the stored
``inputRequests``, its status and the page a person answers it on.
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.models import User
from django.http import HttpRequest
from django.urls import reverse
from pydantic.alias_generators import to_camel

from mrtrweb.calls.access import readings, shown_to
from mrtrweb.calls.models import Call, Round
from mrtrweb.servers.exposure import sees_whole_catalog, startable_tools
from mrtrweb.servers.forms import lifetime_minutes
from mrtrweb.servers.models import Connection

from .schemas import (
    CallOut,
    PromptOut,
    ResourceOut,
    RoundOut,
    ServerOut,
    ServerSettingsOut,
    ToolOut,
    WaitingForAuthorization,
)


def _username(user: User | None) -> str | None:
    return user.get_username() if user is not None else None


def round_out(request: HttpRequest, round: Round, *, shown: bool = False) -> RoundOut:
    """``round`` as the token's user reads it: a split round only their part (``shown``:
    it is already as they read it)."""
    user = getattr(getattr(request, "auth", None), "user", None)
    if user is not None and not shown:
        round = shown_to(user, round)  # a split round: only the token user's part
    return RoundOut(
        id=round.pk,
        call_id=round.call_id,
        index=round.index,
        status=round.status,
        url=request.build_absolute_uri(round.get_absolute_url()),
        input_requests=dict(round.input_requests or {}),
        unsupported_reason=round.unsupported_reason,
        assigned_user=_username(round.assigned_user),
        assigned_group=round.assigned_group.name if round.assigned_group else None,
        claimed_by=_username(round.claimed_by),
        answered_by=_username(round.answered_by),
        answered_at=round.answered_at,
        created_at=round.created_at,
        expires_at=round.answer_by,  # the renewal policy's deadline when it renews the state
        delivery_error=round.delivery_error,
    )


def status_out(request: HttpRequest, round: Round) -> RoundOut:
    """A round of the call that the token's user may not read (another person's, or a split
    round they have no part in): that it exists and its status, nothing of its questions,
    answers or people."""
    return RoundOut(
        id=round.pk,
        call_id=round.call_id,
        index=round.index,
        status=round.status,
        url=request.build_absolute_uri(round.get_absolute_url()),
        input_requests={},
        created_at=round.created_at,
    )


def _arguments(call: Call) -> Any:
    try:
        return json.loads(call.arguments_json)
    except ValueError:
        return call.arguments_json


def call_out(request: HttpRequest, call: Call) -> CallOut:
    rounds = list(
        call.rounds.select_related(
            "assigned_user", "assigned_group", "claimed_by", "answered_by"
        ).order_by("index")
    )
    user = getattr(getattr(request, "auth", None), "user", None)
    # Each round as the token's user may read it: whole, their part, or only its status.
    read = readings(user, rounds) if user is not None else {r.pk: r for r in rounds}
    resource = call.method == Call.Method.RESOURCE
    return CallOut(
        id=call.pk,
        url=request.build_absolute_uri(call.get_absolute_url()),
        server=call.connection.name,
        method=call.method,
        name=None if resource else call.target,
        uri=call.target if resource else None,
        arguments=None if resource else _arguments(call),
        status=call.status,
        finished=call.is_finished,
        started_by=call.started_by.get_username(),
        created_at=call.created_at,
        finished_at=call.finished_at,
        rounds=[
            status_out(request, r)
            if (shown := read[r.pk]) is None
            else round_out(request, shown, shown=True)
            for r in rounds
        ],
        result=call.result if isinstance(call.result, dict) else None,
        error=call.error,
        policy={to_camel(key): value for key, value in (call.policy or {}).items()},
        waiting_for_authorization=_waiting(request, call),
    )


def _waiting(request: HttpRequest, call: Call) -> WaitingForAuthorization | None:
    if call.waiting_for_authorization_since is None:
        return None
    connect = reverse("authorizations:connect", kwargs={"connection": call.connection.name})
    return WaitingForAuthorization(
        since=call.waiting_for_authorization_since,
        reason=call.waiting_for_authorization_reason,
        connect_url=request.build_absolute_uri(connect),
    )


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def server_out(user: User, connection: Connection) -> ServerOut:
    everything = sees_whole_catalog(user)
    catalog = connection.catalog or {}
    tools = [
        ToolOut(
            name=tool.name,
            title=tool.title,
            description=tool.description,
            input_schema=tool.input_schema,
        )
        for tool in startable_tools(user, connection)
    ]
    prompts = [
        PromptOut(
            name=p["name"],
            title=_text(p.get("title")),
            description=_text(p.get("description")),
            arguments=[a for a in p.get("arguments") or [] if isinstance(a, dict)],
        )
        for p in (catalog.get("prompts") or [] if everything else [])
        if isinstance(p, dict) and isinstance(p.get("name"), str)
    ]
    resources = [
        ResourceOut(
            uri=r["uri"], name=_text(r.get("name")), description=_text(r.get("description"))
        )
        for r in (catalog.get("resources") or [] if everything else [])
        if isinstance(r, dict) and isinstance(r.get("uri"), str)
    ]
    return ServerOut(
        name=connection.name,
        title=connection.title or connection.name,
        enabled=connection.enabled,
        tools=tools,
        prompts=prompts,
        resources=resources,
        catalog_fetched_at=connection.catalog_fetched_at,
    )


def server_settings_out(connection: Connection) -> ServerSettingsOut:
    return ServerSettingsOut(
        name=connection.name,
        title=connection.title,
        url=connection.url,
        enabled=connection.enabled,
        auth=connection.auth,
        token_set=bool(connection.bearer_token),
        header_names=sorted((connection.headers or {}).keys()),
        oauth_client_id=connection.oauth_client_id,
        oauth_client_secret_set=bool(connection.oauth_client_secret),
        oauth_private_key_set=bool(connection.oauth_private_key),
        oauth_scopes=connection.oauth_scopes,
        connect_timeout=connection.connect_timeout,
        read_timeout=connection.read_timeout,
        max_response_bytes=connection.max_response_bytes,
        state_lifetime_minutes=float(lifetime_minutes(connection.state_lifetime)),
        max_rounds=connection.max_rounds,
        answer_deadline=connection.answer_deadline,
        answer_deadline_max=connection.answer_deadline_max,
        question_deadline=connection.question_deadline,
        routing=connection.routing,
        route_user=_username(connection.route_user),
        route_group=connection.route_group.name if connection.route_group else None,
    )
