"""Operators' connection create/update/test over the API, through the console's own code.

The JSON body becomes the data the console's form would post, and
:class:`mrtrweb.servers.forms.ConnectionForm` validates and saves it, so the rules (URL
schemes, no credentials in the URL, header syntax, routing targets) are the console's.
Secrets are write-only: nothing here returns or logs the token or a header value. The
operations (``/api/v1/servers...``) are at the end; all but the list are for operators only,
checked by their auth before the body is read.
"""

from __future__ import annotations

import logging
from typing import Annotated, Any

from django.contrib.auth.models import Group, User
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from ninja import Status
from pydantic import Field

from mrtrweb.servers.catalog import refresh_catalog
from mrtrweb.servers.exposure import offered_connections
from mrtrweb.servers.forms import ConnectionForm, lifetime_minutes
from mrtrweb.servers.models import Connection
from mrtrweb.servers.probe import probe_summary

from .problems import ApiError, not_found, pointer
from .schemas import (
    CreateServer,
    ProblemField,
    ServerFields,
    ServerList,
    ServerSettingsOut,
    ServerTestOut,
    UpdateServer,
)
from .serialize import server_out, server_settings_out
from .service import OPERATOR, api, problems, says, token_of

logger = logging.getLogger(__name__)

ServerName = Annotated[str, Field(pattern=r"^[-a-zA-Z0-9_]+$", max_length=64)]

# Form field -> the body field it came from, for pointing at the culprit.
FORM_TO_BODY = {
    "name": "name",
    "title": "title",
    "url": "url",
    "bearer_token": "bearerToken",
    "clear_token": "bearerToken",
    "headers": "headers",
    "clear_headers": "headers",
    "auth": "auth",
    "oauth_client_id": "oauthClientId",
    "oauth_client_secret": "oauthClientSecret",
    "clear_client_secret": "oauthClientSecret",
    "oauth_private_key": "oauthPrivateKey",
    "clear_private_key": "oauthPrivateKey",
    "oauth_scopes": "oauthScopes",
    "connect_timeout": "connectTimeout",
    "read_timeout": "readTimeout",
    "max_response_bytes": "maxResponseBytes",
    "state_lifetime": "stateLifetimeMinutes",
    "max_rounds": "maxRounds",
    "answer_deadline": "answerDeadline",
    "answer_deadline_max": "answerDeadlineMax",
    "question_deadline": "questionDeadline",
    "routing": "routing",
    "route_user": "routeUser",
    "route_group": "routeGroup",
}


# Write-only secrets of the form: a value replaces the stored one, null removes it.
SECRET_CLEARS = {
    "oauth_client_secret": "clear_client_secret",
    "oauth_private_key": "clear_private_key",
}


def _base_data(connection: Connection) -> dict[str, Any]:
    """What the console's form would post for ``connection`` as it stands (no secrets)."""
    return {
        "name": connection.name,
        "title": connection.title,
        "url": connection.url,
        "oauth_client_id": connection.oauth_client_id,
        "oauth_scopes": connection.oauth_scopes,
        # Not in the API's body yet: kept as it stands, never cleared by an update.
        "oauth_allowed_hosts": connection.oauth_allowed_hosts,
        "connect_timeout": str(connection.connect_timeout),
        "read_timeout": str(connection.read_timeout),
        "max_response_bytes": str(connection.max_response_bytes),
        "state_lifetime": str(lifetime_minutes(connection.state_lifetime)),
        "max_rounds": str(connection.max_rounds),
        "answer_deadline": str(connection.answer_deadline),
        "answer_deadline_max": str(connection.answer_deadline_max),
        "question_deadline": str(connection.question_deadline),
        "routing": connection.routing,
        "route_user": connection.route_user.get_username() if connection.route_user else "",
        "route_group": str(connection.route_group_id or ""),
    }


def _form_data(body: ServerFields, connection: Connection) -> dict[str, Any]:
    data = _base_data(connection)
    given = body.model_dump(exclude_unset=True)
    problems: list[ProblemField] = []
    for field, value in given.items():
        if field == "bearer_token":
            if value:
                data["bearer_token"] = value
            else:
                data["clear_token"] = "on"
        elif field in SECRET_CLEARS:
            if value:
                data[field] = value
            else:
                data[SECRET_CLEARS[field]] = "on"
        elif field == "headers":
            if value:
                for name, header in value.items():
                    if any(c in name + header for c in "\r\n"):
                        problems.append(
                            ProblemField(
                                detail="Header names and values are one line each.",
                                pointer=pointer("headers", name),
                            )
                        )
                data["headers"] = "\n".join(f"{n}: {v}" for n, v in value.items())
            else:
                data["clear_headers"] = "on"
        elif field == "state_lifetime_minutes":
            data["state_lifetime"] = "" if value is None else repr(value)
        elif field == "route_group":
            group = Group.objects.filter(name=value).first() if value else None
            if value and group is None:
                problems.append(
                    ProblemField(detail="No group has this name.", pointer="/routeGroup")
                )
            data["route_group"] = str(group.pk) if group else ""
        else:
            data[field] = "" if value is None else str(value)
    if problems:
        raise ApiError(422, "Some fields are not valid.", kind="invalid-body", errors=problems)
    return data


def _save(form: ConnectionForm) -> Connection:
    if not form.is_valid():
        problems = []
        for field, messages in form.errors.items():
            where = "/" + FORM_TO_BODY[field] if field in FORM_TO_BODY else ""
            problems += [ProblemField(detail=str(m), pointer=where or None) for m in messages]
        raise ApiError(422, "Some fields are not valid.", kind="invalid-body", errors=problems)
    return form.save()


def _log(user: User, connection: Connection, form: ConnectionForm, verb: str) -> None:
    # Names of what changed, never values: the values may be secrets.
    secret = ("bearer_token", "headers", "oauth_client_secret", "oauth_private_key")
    changed = [f for f in form.changed_data if f not in secret]
    logger.info(
        "operator %s %s connection %s through the API (fields: %s; secrets: %s)",
        user.get_username(),
        verb,
        connection.name,
        ", ".join(f for f in changed if not f.startswith("clear_")) or "none",
        ", ".join(form.secret_changes()) or "unchanged",
    )


def create(request: HttpRequest, response: HttpResponse, user: User, body: CreateServer) -> Status:
    form = ConnectionForm(_form_data(body, Connection()))
    connection = _save(form)
    _log(user, connection, form, "created")
    location = reverse("api:server", args=[connection.name])
    response["Location"] = request.build_absolute_uri(location)
    return Status(201, server_settings_out(connection))


def _connection(name: str) -> Connection:
    connection = (
        Connection.objects.select_related("route_user", "route_group").filter(name=name).first()
    )
    if connection is None:
        raise not_found("No server")
    return connection


def show(name: str) -> ServerSettingsOut:
    return server_settings_out(_connection(name))


def update(user: User, name: str, body: UpdateServer) -> ServerSettingsOut:
    connection = _connection(name)
    form = ConnectionForm(_form_data(body, connection), instance=connection)
    connection = _save(form)
    _log(user, connection, form, "changed")
    return server_settings_out(_connection(name))


def test(user: User, name: str) -> ServerTestOut:
    connection = _connection(name)
    report = refresh_catalog(connection)
    summary = probe_summary(report, connection)
    logger.info(
        "operator %s tested connection %s through the API: %s",
        user.get_username(),
        name,
        "ok" if summary["ok"] else summary["kind"],
    )
    if not summary["ok"]:
        out = ServerTestOut(
            ok=False,
            kind=summary["kind"],
            explanation=summary["explanation"],
            error=summary["error"],
        )
    else:
        out = ServerTestOut(
            ok=True,
            server_name=summary["name"],
            server_version=summary["version"],
            protocol_version=summary["protocol_version"],
            counts=summary["counts"],
        )
    return out


# -- the operations -------------------------------------------------------------------------


@api.get(
    "/servers",
    url_name="servers",
    operation_id="listServers",
    by_alias=True,
    summary="List servers",
    description=(
        "The servers the token's user may start calls on, with the tools they may start "
        "(operators and admins: every tool, prompt and resource)."
    ),
    response={200: ServerList, **problems()},
    openapi_extra=says(200, "The servers."),
)
def servers(request: HttpRequest) -> ServerList:
    user = token_of(request).user
    return ServerList(servers=[server_out(user, c) for c in offered_connections(user)])


@api.post(
    "/servers",
    auth=OPERATOR,
    operation_id="createServer",
    by_alias=True,
    summary="Add a server (operators)",
    description="Secrets (`bearerToken`, `headers`) are write-only and never returned.",
    response={201: ServerSettingsOut, **problems(400, 403, 413, 415, 422)},
    openapi_extra=says(201, "The new connection."),
)
def server_create(request: HttpRequest, response: HttpResponse, body: CreateServer) -> Status:
    return create(request, response, token_of(request).user, body)


@api.get(
    "/servers/{name}",
    auth=OPERATOR,
    url_name="server",
    operation_id="getServer",
    by_alias=True,
    summary="Get a server's settings (operators)",
    description="The connection's settings; secrets only as whether they are set.",
    response={200: ServerSettingsOut, **problems(403, 404)},
    openapi_extra=says(200, "The connection."),
)
def server_detail(request: HttpRequest, name: ServerName) -> ServerSettingsOut:
    return show(name)


@api.patch(
    "/servers/{name}",
    auth=OPERATOR,
    operation_id="updateServer",
    by_alias=True,
    summary="Change a server (operators)",
    description="Only the fields given change. Omit a secret to keep it; `null` removes it.",
    response={200: ServerSettingsOut, **problems(400, 403, 404, 413, 415, 422)},
    openapi_extra=says(200, "The connection."),
)
def server_update(request: HttpRequest, name: ServerName, body: UpdateServer) -> ServerSettingsOut:
    return update(token_of(request).user, name, body)


@api.post(
    "/servers/{name}/test",
    auth=OPERATOR,
    url_name="server_test",
    operation_id="testServer",
    by_alias=True,
    summary="Test a server (operators)",
    description="Probe the server and refresh its cached catalog.",
    response={200: ServerTestOut, **problems(403, 404)},
    openapi_extra=says(200, "What the test found."),
)
def server_test(request: HttpRequest, name: ServerName) -> ServerTestOut:
    return test(token_of(request).user, name)
