"""A headless MCP client for the official conformance suite (docs/conformance.md).

The suite starts a mock server per scenario and runs ``<command> <server URL>`` with the
scenario's name in ``MCP_CONFORMANCE_SCENARIO``. This command reads that name, looks up the
steps in ``SCENARIOS`` and performs them with ``mrtrweb.mcp`` only, so the suite judges the
very client the web app uses. It touches no database.

The ``auth/*`` scenarios protect their server with OAuth: the command then authorizes with
``mrtrweb.oauth``'s headless authenticator, which follows the mock authorization server's
redirect itself. What a scenario hands over (pre-registered client credentials, a private key
for ``private_key_jwt``) comes as JSON in ``MCP_CONFORMANCE_CONTEXT``. A scenario that expects
the client to refuse (a wrong ``iss``, a foreign ``resource``...) ends in a one-line message and
a non-zero exit, never a traceback.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx
import mcp_types
from django.core.management.base import BaseCommand, CommandError, CommandParser
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mrtrweb.mcp import (
    AuthorizationRequired,
    ConnectionSettings,
    MCPClient,
    MCPError,
    drive_rounds,
)
from mrtrweb.oauth import ClientIdentity
from mrtrweb.oauth.headless import HeadlessAuthenticator

from ._handshake_conformance import is_handshake_version, run_handshake_scenario
from ._schema_values import answer, tool_arguments

SCENARIO_ENV = "MCP_CONFORMANCE_SCENARIO"
CONTEXT_ENV = "MCP_CONFORMANCE_CONTEXT"
VERSION_ENV = "MCP_CONFORMANCE_PROTOCOL_VERSION"

# A headless run cannot send anyone to a URL, so it declares form elicitation only.
CAPABILITIES = mcp_types.ClientCapabilities(
    elicitation=mcp_types.ElicitationCapability(form=mcp_types.FormElicitationCapability())
)


# -- the steps a scenario is made of ------------------------------------------------------


@dataclass(frozen=True)
class ListTools:
    """``tools/list``; later steps use the tools it kept."""


@dataclass(frozen=True)
class CallTool:
    """Call one tool and drive its rounds; ``arguments=None`` builds them from the schema.

    ``between_rounds`` names a tool called after the first round and before the retry, to
    show that one call's round data never leaks into another request.
    """

    name: str
    arguments: Mapping[str, Any] | None = None
    between_rounds: str | None = None


@dataclass(frozen=True)
class CallFirstTool:
    """Call the first listed tool with arguments built from its schema."""


@dataclass(frozen=True)
class CallEachTool:
    """Call every listed tool with arguments built from its schema."""


@dataclass(frozen=True)
class CallContextTools:
    """Make exactly the calls listed in ``MCP_CONFORMANCE_CONTEXT["toolCalls"]``."""


@dataclass(frozen=True)
class ReadEachResource:
    """``resources/list``, then read every resource."""


@dataclass(frozen=True)
class GetEachPrompt:
    """``prompts/list``, then get every prompt."""


@dataclass(frozen=True)
class EchoSchema:
    """Call ``via`` with the ``inputSchema`` of ``source`` (as listed) as argument ``argument``."""

    source: str
    via: str
    argument: str


Step = (
    ListTools
    | CallTool
    | CallFirstTool
    | CallEachTool
    | CallContextTools
    | ReadEachResource
    | GetEachPrompt
    | EchoSchema
)

# Every flow starts with server/discover; these are the steps after it.
SCENARIOS: dict[str, tuple[Step, ...]] = {
    "tools_call": (ListTools(), CallTool("add_numbers", {"a": 2, "b": 3})),
    "request-metadata": (ListTools(),),
    "sep-2322-client-request-state": (
        ListTools(),
        CallTool("test_mrtr_echo_state", {}, between_rounds="test_mrtr_unrelated"),
        CallTool("test_mrtr_no_state", {}),
        CallTool("test_mrtr_no_result_type", {}),
    ),
    "http-standard-headers": (ListTools(), CallEachTool(), ReadEachResource(), GetEachPrompt()),
    "http-custom-headers": (ListTools(), CallContextTools()),
    "http-invalid-tool-headers": (ListTools(), CallEachTool()),
    "json-schema-ref-no-deref": (ListTools(),),
    "json-schema-2020-12-preservation": (
        ListTools(),
        EchoSchema("json_schema_2020_12_tool", via="json_schema_echo", argument="schema"),
    ),
    # Handshake-era scenarios (spec 2025-11-25): run by _handshake_conformance.
    "initialize": (ListTools(),),
    "elicitation-sep1034-client-defaults": (
        ListTools(),
        CallTool("test_client_elicitation_defaults", {}),
    ),
    "sse-retry": (ListTools(), CallTool("test_reconnection", {})),
}
GENERIC: tuple[Step, ...] = (ListTools(), CallFirstTool())

# The suite's OAuth scenarios for 2026-07-28, and the client-credentials extension's. Their
# servers list one tool; calling it after listing exercises a second scope (step-up) and a
# token that stops working (a migrated authorization server).
AUTH_FLOW: tuple[Step, ...] = (ListTools(), CallFirstTool())
AUTH_SCENARIOS = (
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/pre-registration",
    "auth/resource-mismatch",
    "auth/offline-access-scope",
    "auth/offline-access-not-supported",
    "auth/authorization-server-migration",
    "auth/iss-supported",
    "auth/iss-not-advertised",
    "auth/iss-supported-missing",
    "auth/iss-wrong-issuer",
    "auth/iss-unexpected",
    "auth/iss-normalized",
    "auth/metadata-issuer-mismatch",
    "auth/client-credentials-basic",
    "auth/client-credentials-jwt",
)
SCENARIOS.update(dict.fromkeys(AUTH_SCENARIOS, AUTH_FLOW))

# The suite's authorization servers that accept client ID metadata documents expect this
# client ID (it is never fetched: the mock approves every request).
CONFORMANCE_CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"
# Never visited: the headless authenticator reads the code from the redirect to it.
REDIRECT_URI = "http://127.0.0.1/oauth/callback"


def steps_for(scenario: str | None) -> tuple[Step, ...]:
    return SCENARIOS.get(scenario or "", GENERIC)


def context_tool_calls(raw_context: str | None) -> list[tuple[str, dict[str, Any]]]:
    """The ``(name, arguments)`` pairs of ``toolCalls`` in the suite's JSON context."""
    if not raw_context:
        return []
    context = json.loads(raw_context)
    calls = context.get("toolCalls") if isinstance(context, dict) else None
    if not isinstance(calls, list):
        return []
    return [
        (call["name"], dict(call.get("arguments") or {}))
        for call in calls
        if isinstance(call, dict) and isinstance(call.get("name"), str)
    ]


# -- running the steps -------------------------------------------------------------------


@dataclass
class Runner:
    client: MCPClient
    log: Callable[[str], None]
    context: str | None = None
    tools: dict[str, mcp_types.Tool] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    async def run(self, steps: tuple[Step, ...]) -> None:
        try:
            await self.run_steps(steps)
        except AuthorizationRequired as exc:
            # Without authorization nothing else can succeed: stop at the first refusal.
            self.fail(f"authorization: {exc}")

    async def run_steps(self, steps: tuple[Step, ...]) -> None:
        try:
            found = await self.client.discover()
            self.log(f"server/discover: versions {found.supported_versions}")
        except AuthorizationRequired:
            raise
        except MCPError as exc:
            # Clients may skip discovery altogether, so a failure here is no verdict.
            self.log(f"server/discover failed (not fatal): {type(exc).__name__}: {exc}")
        for step in steps:
            await self.guarded(str(step), self.perform(step))

    async def guarded(self, what: str, operation: Awaitable[None]) -> None:
        """Run one operation; record its failure and go on, so one bad item hides no other.

        A refused authorization is not such a failure: it ends the run (``run``).
        """
        try:
            await operation
        except AuthorizationRequired:
            raise
        except MCPError as exc:
            self.fail(f"{what}: {type(exc).__name__}: {exc}")

    def fail(self, message: str) -> None:
        self.errors.append(message)
        self.log(f"ERROR {message}")

    async def perform(self, step: Step) -> None:
        match step:
            case ListTools():
                listing = await self.client.list_tools()
                self.tools = {tool.name: tool for tool in listing.items}
                # The client logs why each dropped tool was left out.
                dropped = [name for name, _ in listing.dropped]
                self.log(f"tools/list: {list(self.tools)}, dropped {dropped}")
            case CallTool(name, arguments, between_rounds):
                await self.call_tool(name, arguments, between_rounds)
            case CallFirstTool():
                if not self.tools:
                    raise MCPError("the server lists no tools")
                await self.call_tool(next(iter(self.tools)), None)
            case CallEachTool():
                for name in list(self.tools):
                    await self.guarded(f"tools/call {name}", self.call_tool(name, None))
            case CallContextTools():
                for name, arguments in context_tool_calls(self.context):
                    await self.guarded(f"tools/call {name}", self.call_tool(name, arguments))
            case ReadEachResource():
                for resource in (await self.client.list_resources()).items:
                    await self.guarded(
                        f"resources/read {resource.uri}", self.read_resource(resource.uri)
                    )
            case GetEachPrompt():
                for prompt in (await self.client.list_prompts()).items:
                    await self.guarded(f"prompts/get {prompt.name}", self.get_prompt(prompt))
            case EchoSchema(source, via, argument):
                tool = self.tools.get(source)
                if tool is None:
                    raise MCPError(f"tool {source!r} was not listed")
                await self.call_tool(via, {argument: tool.input_schema})

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any] | None, between_rounds: str | None = None
    ) -> None:
        tool = self.tools.get(name)
        if arguments is None:
            arguments = tool_arguments(tool.input_schema) if tool else {}
        # The same JSON text on every round: servers bind requestState to the arguments.
        text = json.dumps(dict(arguments), separators=(",", ":"), ensure_ascii=False)
        sent = 0

        async def send(
            responses: dict[str, Any] | None, state: str | None
        ) -> mcp_types.CallToolResult | mcp_types.InputRequiredResult:
            nonlocal sent
            if sent == 1 and between_rounds:
                await self.call_tool(between_rounds, None)
            sent += 1
            return await self.client.call_tool(
                name, text, input_responses=responses, request_state=state, tool=tool
            )

        result = await self.rounds(send)
        summary = " ".join(
            block.text for block in result.content if isinstance(block, mcp_types.TextContent)
        )
        rounds = f" after {sent} rounds" if sent > 1 else ""
        if result.is_error:
            self.fail(f"tools/call {name}{rounds}: the tool failed: {summary}")
        else:
            self.log(f"tools/call {name}{rounds}: {summary}")

    async def read_resource(self, uri: str) -> None:
        result = await self.rounds(
            lambda responses, state: self.client.read_resource(
                uri, input_responses=responses, request_state=state
            )
        )
        self.log(f"resources/read {uri}: {len(result.contents)} content(s)")

    async def get_prompt(self, prompt: mcp_types.Prompt) -> None:
        arguments = {a.name: "example" for a in prompt.arguments or [] if a.required}
        result = await self.rounds(
            lambda responses, state: self.client.get_prompt(
                prompt.name, arguments, input_responses=responses, request_state=state
            )
        )
        self.log(f"prompts/get {prompt.name}: {len(result.messages)} message(s)")

    async def rounds(self, send: Callable[[Any, Any], Awaitable[Any]]) -> Any:
        return await drive_rounds(send, answer)


def handshake_step(step: Step) -> tuple[Any, ...]:
    """A step as the handshake-era flow (_handshake_conformance) takes it."""
    match step:
        case ListTools():
            return ("list",)
        case CallTool(name, arguments, _):
            return ("call", name, arguments)
        case CallFirstTool():
            return ("call_first",)
        case CallEachTool():
            return ("call_each",)
    return (str(step),)


def authenticator_for(
    http: httpx.AsyncClient, url: str, scenario: str, raw_context: str | None
) -> HeadlessAuthenticator:
    """The headless authenticator of an ``auth/*`` scenario, with what its context hands over:
    ``client_id`` and ``client_secret`` (pre-registered), ``issuer`` (whose they are),
    ``private_key_pem`` (``private_key_jwt``)."""
    context = json.loads(raw_context) if raw_context else {}
    context = context if isinstance(context, dict) else {}
    client_id = context.get("client_id")
    preregistered = None
    if isinstance(client_id, str) and client_id:
        preregistered = ClientIdentity(
            issuer=str(context.get("issuer") or ""),
            client_id=client_id,
            client_secret=context.get("client_secret"),
            token_endpoint_auth_method="",  # as the authorization server offers
            registered_via="pre-registered",
        )
    key = context.get("private_key_pem")
    return HeadlessAuthenticator(
        http,
        url,
        redirect_uri=REDIRECT_URI,
        client_name="mrtrweb conformance client",
        metadata_document_url=CONFORMANCE_CLIENT_METADATA_URL,
        preregistered=preregistered,
        client_credentials=scenario.startswith("auth/client-credentials"),
        private_key_pem=key if isinstance(key, str) else None,
    )


async def run_scenario(
    url: str, scenario: str | None, context: str | None, log: Callable[[str], None]
) -> list[str]:
    """Run the scenario's steps against ``url``; return the errors (empty on success)."""
    version = os.environ.get(VERSION_ENV)
    if is_handshake_version(version):
        assert version is not None
        return await run_handshake_scenario(
            url,
            [handshake_step(step) for step in steps_for(scenario)],
            log,
            version=version,
            capabilities=CAPABILITIES,
        )
    async with httpx.AsyncClient(timeout=httpx.Timeout(20.0, connect=5.0)) as oauth_http:
        authenticator = None
        if scenario and scenario.startswith("auth/"):
            authenticator = authenticator_for(oauth_http, url, scenario, context)
        version_given: dict[str, Any] = (
            {"protocol_version": version} if version in MODERN_PROTOCOL_VERSIONS else {}
        )
        settings = ConnectionSettings(
            url=url,
            connect_timeout=5.0,
            # The suite kills the client after 30 s; fail with a message before that.
            read_timeout=20.0,
            capabilities=CAPABILITIES,
            authenticator=authenticator,
            **version_given,
        )
        async with MCPClient(settings) as client:
            runner = Runner(client, log, context)
            await runner.run(steps_for(scenario))
    return runner.errors


class Command(BaseCommand):
    help = (
        "Act as the client of one MCP conformance-suite scenario (named by "
        f"{SCENARIO_ENV}) against URL; unknown scenarios discover, list tools and call the "
        "first one. Exits non-zero on any error."
    )
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("url", help="the MCP endpoint (the suite appends it)")

    def handle(self, *args: Any, url: str, **options: Any) -> None:
        scenario = os.environ.get(SCENARIO_ENV)
        self.stderr.write(f"scenario {scenario or '(none)'} against {url}")
        errors = asyncio.run(
            run_scenario(url, scenario, os.environ.get(CONTEXT_ENV), self.stderr.write)
        )
        if errors:
            raise CommandError(f"{len(errors)} step(s) failed; the first: {errors[0]}")
        self.stdout.write(f"scenario {scenario or '(generic)'}: done")
