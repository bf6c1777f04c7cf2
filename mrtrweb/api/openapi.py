"""The OpenAPI 3.1 document of the JSON API, generated from the pydantic models it serves.

Every body schema comes from ``model_json_schema`` (all models at once, so shared parts are
one component each); paths, parameters and status codes are listed here, next to each other,
so a new endpoint is one entry. The browsable reference page renders this same document.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from . import idempotency, schemas
from .auth import LAST_USED_EVERY
from .problems import MAX_BODY_BYTES, PROBLEM_TYPE
from .views import MAX_WAIT_SECONDS, ROUND_LIST_LIMIT

REF = "#/components/schemas/{model}"
MAX_ID = 2**63 - 1

PROBLEM_WORDS = {
    400: "The body is not valid JSON.",
    401: "No token, or an unknown or revoked one (see WWW-Authenticate).",
    403: "The token's user lacks the role (operators only).",
    404: "Nothing with this id that the token's user may see.",
    409: "The state does not allow it (already answered, already finished, ...).",
    413: f"The body is larger than {MAX_BODY_BYTES} bytes.",
    415: "The body is not application/json.",
    422: ("The body, a query parameter or a header is invalid; `errors` points at each culprit."),
    502: "The MCP server could not be reached.",
    503: (
        "The database stayed busy past its lock timeout; nothing was stored or started. "
        "Send the same request again after `Retry-After` seconds."
    ),
}


def _ref(model: type[BaseModel]) -> dict[str, str]:
    return {"$ref": REF.format(model=model.__name__)}


def _json(model: type[BaseModel], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": _ref(model)}}}


PROBLEM_HEADERS = {
    401: {"WWW-Authenticate": {"schema": {"type": "string"}}},
    503: {"Retry-After": {"schema": {"type": "integer", "minimum": 0}}},
}


def _problems(*codes: int) -> dict[str, Any]:
    return {
        str(code): {
            "description": PROBLEM_WORDS[code],
            "content": {PROBLEM_TYPE: {"schema": _ref(schemas.Problem)}},
            **({"headers": PROBLEM_HEADERS[code]} if code in PROBLEM_HEADERS else {}),
        }
        for code in (401, *codes)
    }


def _with_location(response: dict[str, Any], *, replayed: bool = False) -> dict[str, Any]:
    headers: dict[str, Any] = {
        "Location": {"description": "The call's address", "schema": {"type": "string"}}
    }
    if replayed:
        headers["Idempotent-Replayed"] = {"schema": {"type": "string", "enum": ["true"]}}
    return {**response, "headers": headers}


def _body(model: type[BaseModel]) -> dict[str, Any]:
    return {"required": True, "content": {"application/json": {"schema": _ref(model)}}}


ID = {
    "name": "id",
    "in": "path",
    "required": True,
    "schema": {"type": "integer", "minimum": 1, "maximum": MAX_ID},
}
IDEMPOTENCY_KEY = {
    "name": idempotency.HEADER,
    "in": "header",
    "required": False,
    "description": (
        "Your name for this request (a UUID, say), new for each new request: a retry with the "
        "same key and the same body gets the call the first request started (`200`, "
        "`Idempotent-Replayed: true`) instead of starting another; the same key with another "
        f"body is a `422`. Keys are kept {idempotency.TTL.total_seconds() / 3600:g} hours, "
        "per API token. Of concurrent requests with the same key, one starts the call and "
        "the others answer `200` with it, even while it still runs."
    ),
    "schema": {
        "type": "string",
        "minLength": 1,
        "maxLength": idempotency.MAX_LENGTH,
        "pattern": "^[!-~]([ -~]*[!-~])?$",
    },
}
SERVER_NAME = {
    "name": "name",
    "in": "path",
    "required": True,
    "schema": {"type": "string", "pattern": "^[-a-zA-Z0-9_]+$", "maxLength": 64},
}


def _operation(summary: str, description: str, **rest: Any) -> dict[str, Any]:
    return {"summary": summary, "description": description, **rest}


def _paths() -> dict[str, Any]:
    return {
        "/calls": {
            "post": _operation(
                "Start a call",
                "Start a tool call, prompt or resource read on a server the token's user may "
                "use. The call runs until it completes, fails or waits for a person; the "
                "answer is the call in that state. With `webhook`, that URL is told of every "
                "new pending round and of the finished call.",
                operationId="startCall",
                parameters=[IDEMPOTENCY_KEY],
                requestBody=_body(schemas.StartCall),
                responses={
                    "201": _with_location(
                        _json(schemas.CallOut, "The call, as it stands after its first run.")
                    ),
                    "200": _with_location(
                        _json(
                            schemas.CallOut,
                            "The call an earlier request with the same Idempotency-Key and "
                            "body started, as it is now (`Idempotent-Replayed: true`).",
                        ),
                        replayed=True,
                    ),
                    **_problems(400, 413, 415, 422, 502, 503),
                },
            )
        },
        "/calls/{id}": {
            "get": _operation(
                "Get a call",
                "The call, its rounds and, once finished, its result. With `wait`, the "
                "request is held until the call's or a round's status changes, or `wait` "
                "seconds pass (a finished call answers at once).",
                operationId="getCall",
                parameters=[
                    ID,
                    {
                        "name": "wait",
                        "in": "query",
                        "required": False,
                        "schema": {"type": "number", "minimum": 0, "maximum": MAX_WAIT_SECONDS},
                    },
                ],
                responses={"200": _json(schemas.CallOut, "The call."), **_problems(404, 422)},
            )
        },
        "/calls/{id}/cancel": {
            "post": _operation(
                "Cancel a call",
                "Answer the call's open round with `cancel` for every request (a round nobody "
                "can answer is abandoned). For whoever may answer the round or started the call.",
                operationId="cancelCall",
                parameters=[ID],
                responses={
                    "200": _json(schemas.CallOut, "The call, its cancel on its way."),
                    **_problems(404, 409),
                },
            )
        },
        "/rounds": {
            "get": _operation(
                "List rounds routed to me",
                "Rounds routed to the token's user: assigned to them, or to one of their "
                "groups and not claimed by someone else. Newest first.",
                operationId="listRounds",
                parameters=[
                    {
                        "name": "status",
                        "in": "query",
                        "required": False,
                        "schema": {
                            "type": "string",
                            "enum": [
                                "pending",
                                "submitted",
                                "delivering",
                                "delivered",
                                "failed",
                                "expired",
                                "cancelled",
                            ],
                            "default": "pending",
                        },
                    },
                    {
                        "name": "limit",
                        "in": "query",
                        "required": False,
                        "schema": {
                            "type": "integer",
                            "minimum": 1,
                            "maximum": ROUND_LIST_LIMIT,
                            "default": 50,
                        },
                    },
                ],
                responses={"200": _json(schemas.RoundList, "The rounds."), **_problems(422)},
            )
        },
        "/rounds/{id}/responses": {
            "post": _operation(
                "Answer a round",
                "One answer per key of the round's inputRequests, validated exactly as the "
                "round's page validates a person's. Delivery to the server follows.",
                operationId="answerRound",
                parameters=[ID],
                requestBody=_body(schemas.SubmitResponses),
                responses={
                    "202": _json(schemas.RoundOut, "Accepted; the answers are being delivered."),
                    **_problems(400, 404, 409, 413, 415, 422),
                },
            )
        },
        "/servers": {
            "get": _operation(
                "List servers",
                "The servers the token's user may start calls on, with the tools they may "
                "start (operators and admins: every tool, prompt and resource).",
                operationId="listServers",
                responses={"200": _json(schemas.ServerList, "The servers."), **_problems()},
            ),
            "post": _operation(
                "Add a server (operators)",
                "Secrets (`bearerToken`, `headers`) are write-only and never returned.",
                operationId="createServer",
                requestBody=_body(schemas.CreateServer),
                responses={
                    "201": _json(schemas.ServerSettingsOut, "The new connection."),
                    **_problems(400, 403, 413, 415, 422),
                },
            ),
        },
        "/servers/{name}": {
            "get": _operation(
                "Get a server's settings (operators)",
                "The connection's settings; secrets only as whether they are set.",
                operationId="getServer",
                parameters=[SERVER_NAME],
                responses={
                    "200": _json(schemas.ServerSettingsOut, "The connection."),
                    **_problems(403, 404),
                },
            ),
            "patch": _operation(
                "Change a server (operators)",
                "Only the fields given change. Omit a secret to keep it; `null` removes it.",
                operationId="updateServer",
                parameters=[SERVER_NAME],
                requestBody=_body(schemas.UpdateServer),
                responses={
                    "200": _json(schemas.ServerSettingsOut, "The connection."),
                    **_problems(400, 403, 404, 413, 415, 422),
                },
            ),
        },
        "/servers/{name}/test": {
            "post": _operation(
                "Test a server (operators)",
                "Probe the server and refresh its cached catalog.",
                operationId="testServer",
                parameters=[SERVER_NAME],
                responses={
                    "200": _json(schemas.ServerTestOut, "What the test found."),
                    **_problems(403, 404),
                },
            )
        },
    }


@cache
def document() -> dict[str, Any]:
    """The OpenAPI 3.1 document (the same for every request: server URLs are relative)."""
    models = [(m, "validation") for m in schemas.REQUEST_MODELS] + [
        (m, "serialization") for m in schemas.RESPONSE_MODELS
    ]
    _, top = models_json_schema(models, ref_template=REF)
    components = top.get("$defs", {})
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "mrtrweb API",
            "version": "1",
            "description": (
                "Start MCP calls and wait for people's answers. Authenticate with a personal "
                "API token: `Authorization: Bearer mrtr_...` (tokens are made on the "
                "“API tokens” page). Errors are `application/problem+json`. Request bodies "
                "refuse unknown fields. A token's `lastUsedAt` is updated at most every "
                f"{int(LAST_USED_EVERY.total_seconds())} seconds."
            ),
        },
        "servers": [{"url": "/api/v1"}],
        "security": [{"bearerToken": []}],
        "paths": _paths(),
        "components": {
            "schemas": components,
            "securitySchemes": {
                "bearerToken": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "A personal API token, mrtr_<prefix>_<secret>.",
                }
            },
        },
    }
