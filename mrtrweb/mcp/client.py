"""An async MCP 2026-07-28 client over Streamable HTTP.

Every request stands alone: it carries the full ``_meta`` envelope and the
standard headers, and nothing is kept between requests but caches (the tool
schemas needed for ``x-mcp-header``, listings within their ``ttlMs``, and the
era verdict per endpoint). That is what lets a round parked by one process be
resubmitted by another.
"""

from __future__ import annotations

import functools
import itertools
import json
import logging
import ssl
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

import httpx
import mcp_types
from mcp_types.methods import INPUT_REQUIRED_METHODS
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, ValidationError

from . import io_loop
from .config import ConnectionSettings
from .errors import (
    HeaderMismatch,
    HTTPStatusError,
    JSONRPCError,
    LegacyServer,
    MCPError,
    MethodNotFound,
    MissingClientCapability,
    ProtocolError,
    UnsupportedInputRequest,
    UnsupportedProtocolVersion,
    error_from_jsonrpc,
)
from .headers import (
    NAME_BEARING_PARAMS,
    encode_header_value,
    invalid_x_mcp_header,
    param_headers,
    x_mcp_header_map,
)
from .transport import HTTPTransport
from .unfit import unfit

__all__ = ["Era", "Listing", "MCPClient", "NotificationCallback"]

logger = logging.getLogger(__name__)

Era = Literal["modern", "legacy"]
NotificationCallback = Callable[[mcp_types.ServerNotification], Awaitable[None] | None]
ItemT = TypeVar("ItemT", bound=BaseModel)
ResultT = TypeVar("ResultT", bound=mcp_types.Result)

# The SDK caps cache lifetimes at a day; a server asking for more is trusted no further.
MAX_TTL_MS = 24 * 60 * 60 * 1000
# A listing that never ends is refused after this many pages. Each page is a request made
# while a page of the app waits (the catalog is listed on the start page): 1,000 took 6 s.
MAX_PAGES = 100

# Era verdicts per endpoint URL, shared by every client in the process (spec: cache per origin).
_ERA_CACHE: dict[str, Era] = {}
# Listings with cacheScope "public", shared by every client of the same endpoint.
_PUBLIC_LISTINGS: dict[tuple[str, str], tuple[float, Listing[Any]]] = {}


@dataclass(slots=True)
class Listing(Generic[ItemT]):
    """All pages of a list operation."""

    items: list[ItemT]
    ttl_ms: int = 0
    cache_scope: Literal["public", "private"] = "private"
    # Tools left out because their x-mcp-header annotations are invalid: (name, reason).
    dropped: list[tuple[str, str]] = field(default_factory=list)


def _dump(model: BaseModel) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def _encode_params(params: Mapping[str, Any], raw: Mapping[str, str]) -> str:
    """JSON for ``params``, with the members in ``raw`` spliced in as the exact JSON text given."""
    parts = [f"{json.dumps(k)}:{json.dumps(v, separators=(',', ':'))}" for k, v in params.items()]
    parts += [f"{json.dumps(k)}:{text}" for k, text in raw.items()]
    return "{" + ",".join(parts) + "}"


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
        self._private_listings: dict[str, tuple[float, Listing[Any]]] = {}
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

    # -- the envelope ---------------------------------------------------------------------

    def _next_id(self) -> str:
        # Unique across processes too, so a resubmission never reuses an earlier id.
        return f"{self._id_prefix}-{next(self._ids)}"

    def _meta(self, progress_token: str | int | None) -> dict[str, Any]:
        meta: dict[str, Any] = {
            mcp_types.PROTOCOL_VERSION_META_KEY: self._version,
            mcp_types.CLIENT_CAPABILITIES_META_KEY: _dump(self.settings.capabilities),
            mcp_types.CLIENT_INFO_META_KEY: _dump(self.settings.client_info),
        }
        if self.settings.log_level:
            meta[mcp_types.LOG_LEVEL_META_KEY] = self.settings.log_level
        if progress_token is not None:
            meta["progressToken"] = progress_token
        return meta

    def _headers(self, method: str, params: Mapping[str, Any]) -> dict[str, str]:
        headers = {str(k): str(v) for k, v in self.settings.headers.items()}
        if self.settings.bearer_token:
            headers["Authorization"] = f"Bearer {self.settings.bearer_token}"
        headers["MCP-Protocol-Version"] = self._version
        headers["Mcp-Method"] = method
        name_param = NAME_BEARING_PARAMS.get(method)
        if name_param and isinstance(params.get(name_param), str):
            headers["Mcp-Name"] = encode_header_value(params[name_param])
        return headers

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
            status = exc.status if isinstance(exc, HTTPStatusError) else exc.http_status
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
            request_id = self._next_id()
            body_params = {**params, "_meta": self._meta(progress_token)}
            body = (
                '{"jsonrpc":"2.0","id":'
                + json.dumps(request_id)
                + ',"method":'
                + json.dumps(method)
                + ',"params":'
                + _encode_params(body_params, raw_params or {})
                + "}"
            ).encode("utf-8")
            headers = {**self._headers(method, params), **(extra_headers or {})}
            response = await self._transport.post(
                body, request_id, headers, self._notification_handler(on_notification)
            )
            self.last_http_status = response.status
            error = response.message.get("error")
            if error is None:
                result = response.message.get("result")
                if not isinstance(result, dict):
                    raise ProtocolError(f"{method}: the result is not an object")
                _ERA_CACHE.setdefault(self.settings.url, "modern")
                return result
            if not isinstance(error, dict):
                raise ProtocolError(f"{method}: the error is not an object")
            exc = error_from_jsonrpc(
                error, sent_request_state="requestState" in params, http_status=response.status
            )
            if (
                attempt == 0
                and isinstance(exc, UnsupportedProtocolVersion)
                and self._adopt_version(exc)
            ):
                continue
            raise exc
        raise AssertionError("unreachable")

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
            _ERA_CACHE[self.settings.url] = "legacy"
            raise LegacyServer(self.settings.url, f"it supports only {', '.join(supported)}")
        return False

    @staticmethod
    def _notification_handler(
        callback: NotificationCallback | None,
    ) -> Callable[[dict[str, Any]], Awaitable[None]] | None:
        if callback is None:
            return None

        async def handle(message: dict[str, Any]) -> None:
            why = unfit(message)
            if why is not None:
                logger.warning("ignoring a notification %r holding %s", message.get("method"), why)
                return
            try:
                notification = mcp_types.server_notification_adapter.validate_python(message)
            except ValidationError:
                logger.warning("ignoring an unparseable notification %r", message.get("method"))
                return
            outcome = callback(notification)
            if outcome is not None:
                await outcome

        return handle

    # -- era detection ----------------------------------------------------------------------

    async def detect_era(self) -> Era:
        """Whether the endpoint speaks 2026-07-28 ("modern") or only the handshake era.

        Per the spec's backward-compatibility rules: success or a modern JSON-RPC
        error (-32020, -32021, -32022) is modern evidence; a 4xx without one is not.
        401/403 and network failures are raised, never taken as a verdict.
        """
        cached = _ERA_CACHE.get(self.settings.url)
        if cached is not None:
            return cached
        try:
            await self._send("server/discover")
        except (HeaderMismatch, MissingClientCapability, UnsupportedProtocolVersion):
            era: Era = "modern"
        except LegacyServer:
            era = "legacy"
        except (HTTPStatusError, MethodNotFound):
            era = "legacy"
        except JSONRPCError as exc:
            era = "legacy" if exc.http_status is not None and exc.http_status >= 400 else "modern"
        else:
            era = "modern"
        _ERA_CACHE[self.settings.url] = era
        return era

    async def ensure_modern(self) -> None:
        """Raise :class:`LegacyServer`, with what the server says of itself, if it is legacy."""
        if await self.detect_era() == "legacy":
            raise LegacyServer(self.settings.url, await self._describe_legacy())

    async def _raise_if_legacy(self, exc: MCPError) -> None:
        if _ERA_CACHE.get(self.settings.url) == "modern":
            return
        if await self.detect_era() == "legacy":
            raise LegacyServer(self.settings.url, await self._describe_legacy()) from exc

    async def _describe_legacy(self) -> str:
        """Ask the legacy handshake who the server is, for a message a person can act on."""
        body = {
            "jsonrpc": "2.0",
            "id": self._next_id(),
            "method": "initialize",
            "params": {
                "protocolVersion": HANDSHAKE_PROTOCOL_VERSIONS[-1],
                "capabilities": {},
                "clientInfo": _dump(self.settings.client_info),
            },
        }
        headers = {str(k): str(v) for k, v in self.settings.headers.items()}
        if self.settings.bearer_token:
            headers["Authorization"] = f"Bearer {self.settings.bearer_token}"
        try:
            response = await self._transport.post(
                json.dumps(body).encode(), body["id"], headers, None
            )
            result = mcp_types.InitializeResult.model_validate(response.message.get("result"))
        except (MCPError, ValidationError):
            return "it did not answer a 2026-07-28 request as a modern server would"
        info = result.server_info
        return f"{info.name} {info.version} negotiated MCP {result.protocol_version}"

    # -- operations -------------------------------------------------------------------------

    async def discover(self) -> mcp_types.DiscoverResult:
        result = await self.request("server/discover")
        return self._complete("server/discover", result, mcp_types.DiscoverResult)

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
        text, parsed = self._arguments(arguments)
        if tool is not None:
            self._remember_tool(tool)
        params: dict[str, Any] = {"name": name}
        raw = {"arguments": text} if text is not None else {}
        params |= self._round_params(input_responses, request_state)
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
        return self._outcome("tools/call", result, mcp_types.CallToolResult)

    async def get_prompt(
        self,
        name: str,
        arguments: Mapping[str, str] | str | None = None,
        *,
        input_responses: Mapping[str, mcp_types.InputResponse | Mapping[str, Any]] | None = None,
        request_state: str | None = None,
        on_notification: NotificationCallback | None = None,
    ) -> mcp_types.GetPromptResult | mcp_types.InputRequiredResult:
        text, _ = self._arguments(arguments)
        params: dict[str, Any] = {"name": name}
        params |= self._round_params(input_responses, request_state)
        result = await self.request(
            "prompts/get",
            params,
            raw_params={"arguments": text} if text is not None else {},
            on_notification=on_notification,
        )
        return self._outcome("prompts/get", result, mcp_types.GetPromptResult)

    async def read_resource(
        self,
        uri: str,
        *,
        input_responses: Mapping[str, mcp_types.InputResponse | Mapping[str, Any]] | None = None,
        request_state: str | None = None,
        on_notification: NotificationCallback | None = None,
    ) -> mcp_types.ReadResourceResult | mcp_types.InputRequiredResult:
        params: dict[str, Any] = {"uri": uri}
        params |= self._round_params(input_responses, request_state)
        result = await self.request("resources/read", params, on_notification=on_notification)
        return self._outcome("resources/read", result, mcp_types.ReadResourceResult)

    # -- helpers ----------------------------------------------------------------------------

    @staticmethod
    def _arguments(
        arguments: Mapping[str, Any] | str | None,
    ) -> tuple[str | None, dict[str, Any]]:
        """The JSON text to send and its parsed form (for header mirroring)."""
        if arguments is None:
            return None, {}
        if isinstance(arguments, str):
            try:
                parsed = json.loads(arguments)
            except ValueError as exc:
                raise ValueError("arguments must be a JSON object") from exc
            if not isinstance(parsed, dict):
                raise ValueError("arguments must be a JSON object")
            return arguments, parsed
        return json.dumps(dict(arguments), separators=(",", ":"), ensure_ascii=False), dict(
            arguments
        )

    @staticmethod
    def _round_params(
        input_responses: Mapping[str, mcp_types.InputResponse | Mapping[str, Any]] | None,
        request_state: str | None,
    ) -> dict[str, Any]:
        params: dict[str, Any] = {}
        if input_responses is not None:
            params["inputResponses"] = {
                key: _dump(value) if isinstance(value, BaseModel) else dict(value)
                for key, value in input_responses.items()
            }
        # Only ever echo a state the server gave; never invent one.
        if request_state is not None:
            params["requestState"] = request_state
        return params

    def _remember_tool(self, tool: mcp_types.Tool) -> None:
        if invalid_x_mcp_header(tool.input_schema) is None:
            self._tool_headers[tool.name] = x_mcp_header_map(tool.input_schema)

    def _param_headers(self, name: str, arguments: Mapping[str, Any]) -> dict[str, str]:
        header_map = self._tool_headers.get(name)
        return param_headers(header_map, arguments) if header_map else {}

    def _outcome(
        self, method: str, result: dict[str, Any], model: type[ResultT]
    ) -> ResultT | mcp_types.InputRequiredResult:
        if result.get("resultType") == "input_required":
            return self._input_required(method, result)
        return self._complete(method, result, model)

    def _complete(self, method: str, result: dict[str, Any], model: type[ResultT]) -> ResultT:
        result_type = result.get("resultType", "complete")
        if result_type == "input_required":
            raise ProtocolError(f"{method} may not return an InputRequiredResult")
        if result_type != "complete":
            raise ProtocolError(f"{method}: unknown resultType {result_type!r}")
        try:
            return model.model_validate(result)
        except ValidationError as exc:
            raise ProtocolError(f"{method}: malformed result: {exc.errors()[:3]}") from exc

    def _input_required(self, method: str, result: dict[str, Any]) -> mcp_types.InputRequiredResult:
        if method not in INPUT_REQUIRED_METHODS:
            raise ProtocolError(f"{method} may not return an InputRequiredResult")
        requests = result.get("inputRequests") or {}
        if not isinstance(requests, dict):
            raise ProtocolError(f"{method}: inputRequests is not an object")
        state = result.get("requestState")
        if state is not None and not isinstance(state, str):
            raise ProtocolError(f"{method}: requestState is not a string")
        if not requests and state is None:
            raise ProtocolError(f"{method}: InputRequiredResult with neither requests nor state")
        unsupported = [key for key, req in requests.items() if not self._declared(req)]
        if unsupported:
            raise UnsupportedInputRequest(
                f"{method}: the server asked for input this client did not declare "
                f"({', '.join(repr(k) for k in unsupported)})",
                raw_result=result,
                keys=unsupported,
            )
        try:
            return mcp_types.InputRequiredResult.model_validate(result)
        except ValidationError as exc:
            raise UnsupportedInputRequest(
                f"{method}: malformed input requests: {exc.errors()[:3]}",
                raw_result=result,
                keys=list(requests),
            ) from exc

    def _declared(self, request: Any) -> bool:
        """Whether the request is of a kind (and mode) declared in our capabilities."""
        if not isinstance(request, dict):
            return False
        caps = self.settings.capabilities
        method = request.get("method")
        if method == "elicitation/create":
            if caps.elicitation is None:
                return False
            params = request.get("params")
            mode = params.get("mode", "form") if isinstance(params, dict) else None
            if mode == "url":
                return caps.elicitation.url is not None
            if mode == "form":
                # `elicitation: {}` means form mode only.
                return caps.elicitation.form is not None or caps.elicitation.url is None
            return False
        if method == "sampling/createMessage":
            return caps.sampling is not None
        if method == "roots/list":
            return caps.roots is not None
        return False

    def _cache_get(self, method: str) -> Listing[Any] | None:
        now = time.monotonic()
        for store, key in (
            (self._private_listings, method),
            (_PUBLIC_LISTINGS, (self.settings.url, method)),
        ):
            entry = store.get(key)  # type: ignore[call-overload]
            if entry is not None and entry[0] > now:
                return entry[1]
        return None

    def _cache_put(self, method: str, listing: Listing[Any]) -> None:
        if listing.ttl_ms <= 0:
            return
        expires = time.monotonic() + min(listing.ttl_ms, MAX_TTL_MS) / 1000
        if listing.cache_scope == "public":
            _PUBLIC_LISTINGS[(self.settings.url, method)] = (expires, listing)
        else:
            # Private entries live only in this client, i.e. under these credentials.
            self._private_listings[method] = (expires, listing)

    async def _list(
        self, method: str, key: str, model: type[ItemT], *, use_cache: bool
    ) -> Listing[ItemT]:
        if use_cache and (cached := self._cache_get(method)) is not None:
            return cached
        items: list[ItemT] = []
        dropped: list[tuple[str, str]] = []
        ttl: int | None = None
        scope: Literal["public", "private"] = "public"
        cursor: str | None = None
        seen_cursors: set[str] = set()
        for _ in range(MAX_PAGES):
            result = await self.request(method, {"cursor": cursor} if cursor is not None else {})
            if result.get("resultType", "complete") != "complete":
                raise ProtocolError(f"{method}: unexpected resultType {result.get('resultType')!r}")
            page = result.get(key)
            if not isinstance(page, list):
                raise ProtocolError(f"{method}: {key} is not a list")
            for raw_item in page:
                item = self._list_item(method, model, raw_item, dropped)
                if item is not None:
                    items.append(item)
            page_ttl = result.get("ttlMs")
            # Absent or negative ttlMs means immediately stale.
            page_ttl = page_ttl if isinstance(page_ttl, int) and page_ttl > 0 else 0
            ttl = page_ttl if ttl is None else min(ttl, page_ttl)
            if result.get("cacheScope") != "public":
                scope = "private"
            cursor = result.get("nextCursor")
            # Only a missing or null cursor ends the list; "" is a valid cursor.
            if cursor is None:
                break
            if not isinstance(cursor, str):
                raise ProtocolError(f"{method}: nextCursor is not a string")
            if cursor in seen_cursors:
                raise ProtocolError(f"{method}: the server repeated cursor {cursor!r}")
            seen_cursors.add(cursor)
        else:
            raise ProtocolError(f"{method}: more than {MAX_PAGES} pages")
        listing: Listing[ItemT] = Listing(items, ttl or 0, scope, dropped)
        if method == "tools/list":
            self._tool_headers = {
                tool.name: x_mcp_header_map(tool.input_schema)
                for tool in items
                if isinstance(tool, mcp_types.Tool)
            }
        self._cache_put(method, listing)
        return listing

    @staticmethod
    def _list_item(
        method: str, model: type[ItemT], raw_item: Any, dropped: list[tuple[str, str]]
    ) -> ItemT | None:
        name = raw_item.get("name", "?") if isinstance(raw_item, dict) else "?"
        if method == "tools/list" and isinstance(raw_item, dict):
            reason = invalid_x_mcp_header(raw_item.get("inputSchema"))
            if reason is not None:
                logger.warning("dropping tool %r: invalid x-mcp-header (%s)", name, reason)
                dropped.append((str(name), reason))
                return None
        try:
            return model.model_validate(raw_item)
        except ValidationError as exc:
            raise ProtocolError(f"{method}: malformed item {name!r}: {exc.errors()[:3]}") from exc


def forget_era(url: str | None = None) -> None:
    """Drop the cached era verdict of one endpoint, or of all (to re-probe after a failure)."""
    if url is None:
        _ERA_CACHE.clear()
    else:
        _ERA_CACHE.pop(url, None)
