"""The JSON API's bodies, in and out: one pydantic model each, and the OpenAPI components.

Request bodies forbid unknown fields (a typo such as ``"asignee"`` is a 422 naming it, never
silently ignored) and are validated strictly (``"5"`` is not a number). Response bodies are
built from these models and serialized with them, so the OpenAPI document, generated from the
same classes, is what the API really sends.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints
from pydantic.alias_generators import to_camel

from mrtrweb.calls.models import Call, Round

Method = Literal["tools/call", "prompts/get", "resources/read"]
Action = Literal["accept", "decline", "cancel"]
# Taken from the models, so a status they gain is one the API can send (and documents).
# A type checker cannot build a Literal at runtime: for it they are text.
if TYPE_CHECKING:
    CallStatus = str
    RoundStatus = str
else:
    CallStatus = Literal[tuple(Call.Status.values)]
    RoundStatus = Literal[tuple(Round.Status.values)]
Name = Annotated[str, StringConstraints(min_length=1, max_length=2000)]
# JSON objects coming from a server (arguments, schemas, results): any JSON object.
JsonObject = dict[str, Any]


class _In(BaseModel):
    # Only the camelCase names: a snake_case one is an unknown field like any other.
    model_config = ConfigDict(extra="forbid", strict=True, alias_generator=to_camel)


class _Out(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


# -- problems (RFC 9457) ---------------------------------------------------------------------


class ProblemField(_Out):
    """One thing wrong with the request: where (``pointer`` into the body, or a query
    ``parameter``) and why."""

    detail: str
    pointer: str | None = Field(
        default=None, description="RFC 6901 JSON pointer into the request body, e.g. /server"
    )
    parameter: str | None = Field(
        default=None, description="The query parameter (or header) at fault"
    )


class Problem(_Out):
    """``application/problem+json``: every error the API answers with."""

    type: str = Field(description="A URI naming the kind of problem; 'about:blank' for plain HTTP")
    title: str
    status: int
    detail: str = ""
    errors: list[ProblemField] = Field(default_factory=list)


# -- calls -----------------------------------------------------------------------------------


class SplitRoute(_In):
    """Who answers one question of a split round: a user or a group (exactly one)."""

    user: Annotated[str, StringConstraints(min_length=1, max_length=150)] | None = None
    group: Annotated[str, StringConstraints(min_length=1, max_length=150)] | None = None


class CallPolicy(_In):
    """A call's approval policy (docs/approval-policies.md), instead of the tool's and the
    connection's; operators' and admins' tokens only. Every field is optional: what is left
    out is off."""

    renew_expired: bool = Field(
        default=False, description="Renew rounds whose server state expires (renewable tools)"
    )
    renew_for_seconds: int = Field(
        default=7 * 24 * 3600, ge=1, description="The deadline people see while renewed"
    )
    approvals_required: int = Field(default=1, ge=1, le=50, description="2 or more: a quorum")
    approvers_group: Annotated[str, StringConstraints(min_length=1, max_length=150)] | None = Field(
        default=None, description="The group whose members approve"
    )
    rejections_to_decline: int = Field(default=1, ge=1, le=50)
    allow_self_approval: bool = False
    split_routes: dict[str, SplitRoute] = Field(
        default_factory=dict, description="Question key → who answers it"
    )
    split_decline: Literal["decline-round", "send-with-others"] = "decline-round"
    reminders: list[float] = Field(
        default_factory=list, description="Shares of the answering time, e.g. [0.5, 0.9]"
    )
    escalate_after_seconds: int | None = Field(default=None, ge=1)
    escalate_user: Annotated[str, StringConstraints(min_length=1, max_length=150)] | None = None
    escalate_group: Annotated[str, StringConstraints(min_length=1, max_length=150)] | None = None


class StartCall(_In):
    """``POST /api/v1/calls``: start a tool, prompt or resource read on a server."""

    server: Annotated[str, StringConstraints(min_length=1, max_length=64)] = Field(
        description="The connection's name"
    )
    method: Method = "tools/call"
    name: Name | None = Field(default=None, description="The tool or prompt (not resources)")
    uri: Name | None = Field(default=None, description="The resource (resources/read only)")
    arguments: JsonObject = Field(default_factory=dict)
    assignee: Annotated[str, StringConstraints(min_length=1, max_length=150)] | None = Field(
        default=None, description="Username of the person who answers the rounds"
    )
    group: Annotated[str, StringConstraints(min_length=1, max_length=150)] | None = Field(
        default=None, description="Name of the group whose members answer the rounds"
    )
    webhook: Annotated[str, StringConstraints(min_length=1, max_length=2000)] | None = Field(
        default=None,
        description="An http(s) URL told of every new pending round and of the finished call",
    )
    policy: CallPolicy | None = Field(
        default=None,
        description="This call's approval policy instead of the configured one (operators and "
        "admins only)",
    )


class RoundOut(_Out):
    id: int
    call_id: int
    index: int
    status: RoundStatus
    url: str = Field(description="The absolute URL of the round's page, for a person")
    input_requests: dict[str, Any] = Field(
        description=(
            "The server's inputRequests exactly as sent (never its requestState): of a split "
            "round, only the token user's part; empty for a round of the call they may not read"
        )
    )
    unsupported_reason: str = ""
    assigned_user: str | None = None
    assigned_group: str | None = None
    claimed_by: str | None = None
    answered_by: str | None = None
    answered_at: datetime | None = None
    created_at: datetime
    expires_at: datetime | None = None
    delivery_error: str = ""


class WaitingForAuthorization(_Out):
    since: datetime
    reason: str
    connect_url: str = Field(description="Where the caller connects their account (a browser)")


class CallOut(_Out):
    id: int
    url: str = Field(description="The absolute URL of the call's page")
    server: str
    method: Method
    name: str | None = None
    uri: str | None = None
    arguments: Any = Field(description="The arguments as sent")
    status: CallStatus
    finished: bool
    started_by: str
    created_at: datetime
    finished_at: datetime | None = None
    rounds: list[RoundOut]
    result: JsonObject | None = Field(default=None, description="The server's result, once done")
    error: str = ""
    policy: dict[str, Any] = Field(
        default_factory=dict,
        description="The approval policy the call started with (CallPolicy's fields that are "
        "on; {} for none)",
    )
    waiting_for_authorization: WaitingForAuthorization | None = Field(
        default=None,
        description="Set while the call waits for its caller to connect (or reconnect) their "
        "account at the server's authorization server; nothing is lost, and it goes on by "
        "itself once they have",
    )


class Answer(_In):
    action: Action
    content: JsonObject | None = Field(
        default=None, description="With accept, for a form question: its answers by property"
    )


class SubmitResponses(_In):
    """``POST /api/v1/rounds/{id}/responses``: one answer per key of the round's
    inputRequests."""

    responses: dict[str, Answer]
    comment: str = Field(
        default="",
        max_length=2000,
        description="A note for whoever started the call: kept in the audit trail and shown "
        "on the call page, never sent to the server",
    )


class RoundList(_Out):
    rounds: list[RoundOut]


# -- servers ---------------------------------------------------------------------------------


class ToolOut(_Out):
    name: str
    title: str | None = None
    description: str | None = None
    input_schema: JsonObject | None = None


class PromptOut(_Out):
    name: str
    title: str | None = None
    description: str | None = None
    arguments: list[JsonObject] = Field(default_factory=list)


class ResourceOut(_Out):
    uri: str
    name: str | None = None
    description: str | None = None


class ServerOut(_Out):
    name: str
    title: str
    enabled: bool
    tools: list[ToolOut] = Field(description="The tools this token's user may start")
    prompts: list[PromptOut] = Field(description="Operators and admins only; empty otherwise")
    resources: list[ResourceOut] = Field(description="Operators and admins only")
    catalog_fetched_at: datetime | None = None


class ServerList(_Out):
    servers: list[ServerOut]


Routing = Literal["caller", "user", "group"]
Auth = Literal["none", "header", "oauth-person", "oauth-shared", "client-credentials"]


class ServerFields(_In):
    """What an operator may set on a connection. Secrets are write-only: ``bearerToken``,
    ``headers``, ``oauthClientSecret`` and ``oauthPrivateKey`` are never returned; omit them to
    keep the stored ones, ``null`` removes them."""

    title: Annotated[str, StringConstraints(max_length=200)] | None = None
    url: Annotated[str, StringConstraints(min_length=1, max_length=2000)] | None = None
    auth: Auth | None = Field(
        default=None, description="How calls authenticate; omitted: kept (or header with a token)"
    )
    bearer_token: Annotated[str, StringConstraints(max_length=4000)] | None = None
    headers: dict[str, str] | None = None
    oauth_client_id: Annotated[str, StringConstraints(max_length=2000)] | None = None
    oauth_client_secret: Annotated[str, StringConstraints(max_length=4000)] | None = None
    oauth_private_key: Annotated[str, StringConstraints(max_length=20000)] | None = None
    oauth_scopes: Annotated[str, StringConstraints(max_length=2000)] | None = None
    connect_timeout: float | None = None
    read_timeout: float | None = None
    max_response_bytes: int | None = None
    state_lifetime_minutes: float | None = None
    max_rounds: int | None = None
    answer_deadline: float | None = None
    answer_deadline_max: float | None = None
    question_deadline: float | None = Field(
        default=None,
        description="Seconds a person has to answer a handshake-era server's question",
    )
    routing: Routing | None = None
    route_user: str | None = None
    route_group: str | None = None


class CreateServer(ServerFields):
    """``POST /api/v1/servers`` (operators)."""

    name: Annotated[str, StringConstraints(min_length=1, max_length=64)]
    url: Annotated[str, StringConstraints(min_length=1, max_length=2000)]


class UpdateServer(ServerFields):
    """``PATCH /api/v1/servers/{name}`` (operators): only the fields given change."""


class ServerSettingsOut(_Out):
    """A connection as operators see it; secrets only as whether they are set."""

    name: str
    title: str
    url: str
    enabled: bool
    auth: Auth
    token_set: bool
    header_names: list[str]
    oauth_client_id: str
    oauth_client_secret_set: bool
    oauth_private_key_set: bool
    oauth_scopes: str
    connect_timeout: float
    read_timeout: float
    max_response_bytes: int
    state_lifetime_minutes: float
    max_rounds: int
    answer_deadline: float
    answer_deadline_max: float
    question_deadline: float
    routing: Routing
    route_user: str | None = None
    route_group: str | None = None


class ServerTestOut(_Out):
    """What a connection test found."""

    ok: bool
    kind: str = Field(default="", description="The kind of failure (auth, unreachable, ...)")
    explanation: str = ""
    error: str = ""
    server_name: str = ""
    server_version: str = ""
    protocol_version: str = ""
    counts: dict[str, int] = Field(default_factory=dict)


REQUEST_MODELS: tuple[type[BaseModel], ...] = (
    StartCall,
    SubmitResponses,
    CreateServer,
    UpdateServer,
)
RESPONSE_MODELS: tuple[type[BaseModel], ...] = (
    Problem,
    CallOut,
    RoundOut,
    RoundList,
    ServerList,
    ServerSettingsOut,
    ServerTestOut,
)


def dump(model: BaseModel) -> dict[str, Any]:
    """A response model as JSON-ready data, by its wire (camelCase) names."""
    return model.model_dump(mode="json", by_alias=True)
