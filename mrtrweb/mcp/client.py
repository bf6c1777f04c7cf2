"""An async MCP 2026-07-28 client over Streamable HTTP.

Every request stands alone: it carries the full ``_meta`` envelope and the
standard headers, and nothing is kept between requests but caches (the tool
schemas needed for ``x-mcp-header``, listings within their ``ttlMs``, and the
era verdict per endpoint). That is what lets a round parked by one process be
resubmitted by another.

This module is the front door; the parts have a module each: the envelope and headers
(``envelope``), one POST and its limits (``transport``), results (``results``), listings and
their caches (``listing``), era detection (``era``).
"""

from __future__ import annotations

import functools
import itertools
import logging
import ssl
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

import httpx
import mcp_types
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel

from . import era as eras
from . import io_loop
from .auth import MAX_STEP_UPS, MAX_UNAUTHORIZED_RETRIES, is_scope_challenge
from .config import ConnectionSettings
from .envelope import arguments_text, meta, request_body, round_params, standard_headers
from .era import Era, forget_era
from .errors import (
    AuthorizationRequired,
    HeaderMismatch,
    HTTPStatusError,
    JSONRPCError,
    LegacyServer,
    MCPError,
    ProtocolError,
    UnsupportedProtocolVersion,
    error_from_jsonrpc,
)
from .headers import invalid_x_mcp_header, param_headers, x_mcp_header_map
from .listing import Listing, ListingCache, list_all
from .notifications import NotificationCallback, notification_handler
from .results import complete, outcome
from .transport import HTTPTransport, RawResponse

__all__ = ["Era", "Listing", "MCPClient", "NotificationCallback", "forget_era"]

logger = logging.getLogger(__name__)

ItemT = TypeVar("ItemT", bound=BaseModel)


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """httpx's default verifying context, built once per process: loading the CA bundle costs
    about 20 ms, and a client is made for every resubmission (docs/performance.md)."""
    return httpx.create_ssl_context()


class MCPClient:
    """Talks to one MCP server endpoint.

    Use as an async context manager, or pass a shared ``httpx.AsyncClient``
    (the caller then owns it) so connections are pooled across clients.
    """

    def __init__(
        self, settings: ConnectionSettings, *, http: httpx.AsyncClient | None = None
    ) -> None:
        self.settings = settings
        if http is None:
            # On the process's shared loop, connections are pooled across clients.
            http = io_loop.pooled_http(
                connect_timeout=settings.connect_timeout,
                read_timeout=settings.read_timeout,
                verify=_tls_context(),
            )
            self._own_http = http is None
        else:
            self._own_http = False
        self._http = http or io_loop.new_http(
            connect_timeout=settings.connect_timeout,
            read_timeout=settings.read_timeout,
            verify=_tls_context(),
        )
        self._transport = HTTPTransport(
            settings.url,
            http=self._http,
            max_response_bytes=settings.max_response_bytes,
            max_json_depth=settings.max_json_depth,
            answer_deadline=settings.answer_deadline,
            answer_deadline_max=settings.answer_deadline_max,
        )
        self._version = settings.protocol_version
        self._ids = itertools.count(1)
        self._id_prefix = uuid.uuid4().hex[:12]
        # Header maps of listed tools, for mirroring x-mcp-header arguments.
        self._tool_headers: dict[str, dict[tuple[str, ...], str]] = {}
        self._listings = ListingCache(settings.url)
        # The HTTP status of the last answered request, for callers that keep an audit trail.
        self.last_http_status: int | None = None

    async def __aenter__(self) -> MCPClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._own_http:
            await self._http.aclose()

    @property
    def protocol_version(self) -> str:
        return self._version

    def _next_id(self) -> str:
        # Unique across processes too, so a resubmission never reuses an earlier id.
        return f"{self._id_prefix}-{next(self._ids)}"

    # -- one request ------------------------------------------------------------------------

    async def request(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        raw_params: Mapping[str, str] | None = None,
        extra_headers: Mapping[str, str] | None = None,
        on_notification: NotificationCallback | None = None,
        progress_token: str | int | None = None,
    ) -> dict[str, Any]:
        """Send one request and return its raw ``result`` object, or raise.

        ``raw_params`` members are sent as the exact JSON text given; that is how
        the arguments of a call stay byte-for-byte the same across its rounds.
        """
        try:
            return await self._send(
                method,
                params,
                raw_params=raw_params,
                extra_headers=extra_headers,
                on_notification=on_notification,
                progress_token=progress_token,
            )
        except (HTTPStatusError, JSONRPCError) as exc:
            # A 4xx from a server whose era is unknown may be a handshake-era server
            # refusing a modern request; say so instead of surfacing a puzzling error.
            status = exc.http_status
            if status is not None and 400 <= status < 500:
                await self._raise_if_legacy(exc)
            raise

    async def _send(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        raw_params: Mapping[str, str] | None = None,
        extra_headers: Mapping[str, str] | None = None,
        on_notification: NotificationCallback | None = None,
        progress_token: str | int | None = None,
    ) -> dict[str, Any]:
        params = dict(params or {})
        if on_notification is not None and progress_token is None:
            progress_token = f"progress-{uuid.uuid4().hex[:16]}"
        for attempt in range(2):

            async def post(request_id: str, credentials: Mapping[str, str]) -> RawResponse:
                body_params = {
                    **params,
                    "_meta": meta(self.settings, self._version, progress_token),
                }
                body = request_body(request_id, method, body_params, raw_params or {})
                headers = {
                    **standard_headers(self.settings, self._version, method, params),
                    **credentials,
                    **(extra_headers or {}),
                }
                return await self._transport.post(
                    body, request_id, headers, notification_handler(on_notification)
                )

            response = await self._authorized(post)
            self.last_http_status = response.http_status
            error = response.message.get("error")
            if error is None:
                result = response.message.get("result")
                if not isinstance(result, dict):
                    raise ProtocolError(f"{method}: the result is not an object")
                eras.remember(self.settings.url, "modern", overwrite=False)
                return result
            if not isinstance(error, dict):
                raise ProtocolError(f"{method}: the error is not an object")
            exc = error_from_jsonrpc(
                error, sent_request_state="requestState" in params, http_status=response.http_status
            )
            if (
                attempt == 0
                and isinstance(exc, UnsupportedProtocolVersion)
                and self._adopt_version(exc)
            ):
                continue
            raise exc
        raise AssertionError("unreachable")

    async def _authorized(
        self, post: Callable[[str, Mapping[str, str]], Awaitable[RawResponse]]
    ) -> RawResponse:
        """``post`` the request with the authenticator's headers, renewing them when refused.

        Each send gets a new JSON-RPC id: the resend is an independent request. At most one
        resend follows a 401 and at most ``MAX_STEP_UPS`` follow 403 ``insufficient_scope``.
        """
        authenticator = self.settings.authenticator
        unauthorized = step_ups = 0
        while True:
            request_id = self._next_id()
            if authenticator is None:
                return await post(request_id, {})
            credentials = await authenticator.headers()
            try:
                return await post(request_id, credentials)
            except AuthorizationRequired as exc:
                status, challenge = exc.http_status or 401, exc.www_authenticate
                if status == 401:
                    unauthorized += 1
                    why = "" if unauthorized <= MAX_UNAUTHORIZED_RETRIES else "again"
                elif is_scope_challenge(status, challenge):
                    step_ups += 1
                    why = "" if step_ups <= MAX_STEP_UPS else f"after {MAX_STEP_UPS} step-ups"
                else:
                    why = "for a reason more scopes cannot cure"  # e.g. a refused Origin
                if why or not await authenticator.challenged(status, challenge):
                    raise AuthorizationRequired(
                        f"{self.settings.url} refused the credentials (HTTP {status}"
                        + (f", {why})" if why else ") and they could not be renewed"),
                        http_status=status,
                        www_authenticate=challenge,
                    ) from exc

    def _adopt_version(self, exc: UnsupportedProtocolVersion) -> bool:
        """Switch to a mutually supported modern version; False when there is none."""
        supported = exc.supported
        # The version just sent may be listed too (a server that lost its mind for one
        # request): nothing ran, so resending once at the best mutual version is safe.
        mutual = [v for v in MODERN_PROTOCOL_VERSIONS if v in supported]
        if mutual:
            self._version = mutual[-1]
            return True
        if supported and all(v in HANDSHAKE_PROTOCOL_VERSIONS for v in supported):
            eras.remember(self.settings.url, "legacy")
            raise LegacyServer(self.settings.url, f"it supports only {', '.join(supported)}")
        return False

    # -- era detection (mcp/era.py) ---------------------------------------------------------

    async def detect_era(self) -> Era:
        """Whether the endpoint speaks 2026-07-28 ("modern") or only the handshake era."""
        cached = eras.cached(self.settings.url)
        if cached is not None:
            return cached
        verdict = await eras.probe(lambda: self._send("server/discover"))
        eras.remember(self.settings.url, verdict)
        return verdict

    async def ensure_modern(self) -> None:
        """Raise :class:`LegacyServer`, with what the server says of itself, if it is legacy."""
        if await self.detect_era() == "legacy":
            raise LegacyServer(self.settings.url, await self._describe_legacy())

    async def _raise_if_legacy(self, exc: MCPError) -> None:
        if eras.cached(self.settings.url) == "modern":
            return
        if await self.detect_era() == "legacy":
            raise LegacyServer(self.settings.url, await self._describe_legacy()) from exc

    async def _describe_legacy(self) -> str:
        authenticator = self.settings.authenticator
        credentials = await authenticator.headers() if authenticator is not None else {}
        return await eras.describe_legacy(
            self._transport, self.settings, self._next_id(), credentials
        )

    # -- operations -------------------------------------------------------------------------

    async def discover(self) -> mcp_types.DiscoverResult:
        result = await self.request("server/discover")
        return complete("server/discover", result, mcp_types.DiscoverResult)

    async def list_tools(self, *, use_cache: bool = True) -> Listing[mcp_types.Tool]:
        return await self._list("tools/list", "tools", mcp_types.Tool, use_cache=use_cache)

    async def list_prompts(self, *, use_cache: bool = True) -> Listing[mcp_types.Prompt]:
        return await self._list("prompts/list", "prompts", mcp_types.Prompt, use_cache=use_cache)

    async def list_resources(self, *, use_cache: bool = True) -> Listing[mcp_types.Resource]:
        return await self._list(
            "resources/list", "resources", mcp_types.Resource, use_cache=use_cache
        )

    async def list_resource_templates(
        self, *, use_cache: bool = True
    ) -> Listing[mcp_types.ResourceTemplate]:
        return await self._list(
            "resources/templates/list",
            "resourceTemplates",
            mcp_types.ResourceTemplate,
            use_cache=use_cache,
        )

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | str | None = None,
        *,
        input_responses: Mapping[str, mcp_types.InputResponse | Mapping[str, Any]] | None = None,
        request_state: str | None = None,
        tool: mcp_types.Tool | None = None,
        on_notification: NotificationCallback | None = None,
    ) -> mcp_types.CallToolResult | mcp_types.InputRequiredResult:
        """Call a tool, or retry one round of a call.

        ``arguments`` may be the exact JSON text first sent, which is then
        resent byte for byte (servers bind ``requestState`` to a digest of it).
        """
        text, parsed = arguments_text(arguments)
        if tool is not None:
            self._remember_tool(tool)
        params: dict[str, Any] = {"name": name}
        raw = {"arguments": text} if text is not None else {}
        params |= round_params(input_responses, request_state)
        try:
            result = await self.request(
                "tools/call",
                params,
                raw_params=raw,
                extra_headers=self._param_headers(name, parsed),
                on_notification=on_notification,
            )
        except HeaderMismatch:
            # Our copy of the tool's schema may be stale: re-list once and resend.
            await self.list_tools(use_cache=False)
            result = await self.request(
                "tools/call",
                params,
                raw_params=raw,
                extra_headers=self._param_headers(name, parsed),
                on_notification=on_notification,
            )
        return outcome("tools/call", result, mcp_types.CallToolResult, self.settings.capabilities)

    async def get_prompt(
        self,
        name: str,
        arguments: Mapping[str, str] | str | None = None,
        *,
        input_responses: Mapping[str, mcp_types.InputResponse | Mapping[str, Any]] | None = None,
        request_state: str | None = None,
        on_notification: NotificationCallback | None = None,
    ) -> mcp_types.GetPromptResult | mcp_types.InputRequiredResult:
        text, _ = arguments_text(arguments)
        params: dict[str, Any] = {"name": name}
        params |= round_params(input_responses, request_state)
        result = await self.request(
            "prompts/get",
            params,
            raw_params={"arguments": text} if text is not None else {},
            on_notification=on_notification,
        )
        return outcome("prompts/get", result, mcp_types.GetPromptResult, self.settings.capabilities)

    async def read_resource(
        self,
        uri: str,
        *,
        input_responses: Mapping[str, mcp_types.InputResponse | Mapping[str, Any]] | None = None,
        request_state: str | None = None,
        on_notification: NotificationCallback | None = None,
    ) -> mcp_types.ReadResourceResult | mcp_types.InputRequiredResult:
        params: dict[str, Any] = {"uri": uri}
        params |= round_params(input_responses, request_state)
        result = await self.request("resources/read", params, on_notification=on_notification)
        return outcome(
            "resources/read", result, mcp_types.ReadResourceResult, self.settings.capabilities
        )

    # -- tools and listings -----------------------------------------------------------------

    def _remember_tool(self, tool: mcp_types.Tool) -> None:
        if invalid_x_mcp_header(tool.input_schema) is None:
            self._tool_headers[tool.name] = x_mcp_header_map(tool.input_schema)

    def _param_headers(self, name: str, arguments: Mapping[str, Any]) -> dict[str, str]:
        header_map = self._tool_headers.get(name)
        return param_headers(header_map, arguments) if header_map else {}

    async def _list(
        self, method: str, key: str, model: type[ItemT], *, use_cache: bool
    ) -> Listing[ItemT]:
        if use_cache and (cached := self._listings.get(method)) is not None:
            return cached
        listing = await list_all(self.request, method, key, model)
        if method == "tools/list":
            self._tool_headers = {
                tool.name: x_mcp_header_map(tool.input_schema)
                for tool in listing.items
                if isinstance(tool, mcp_types.Tool)
            }
        self._listings.put(method, listing)
        return listing
