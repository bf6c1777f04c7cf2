"""A client for handshake-era MCP servers (2025-11-25, 2025-06-18) over Streamable HTTP.

Most servers running today speak this era: an ``initialize`` handshake, then a session
(``Mcp-Session-Id``) that every request names, and questions asked as server-to-client
requests on the stream of the request that is waiting for them. This client speaks it with
the same transport, limits, error classes and result models as the 2026-07-28 client
(:mod:`.client`), so what comes back is rendered and stored the same way.

One :class:`HandshakeClient` is one session: opened on the first request, closed with
``DELETE`` when the client is closed (``async with`` does it), so every probe and every call
closes what it opened. A server that forgot the session (HTTP 404: it restarted, or it
expired the session) gets a new one, and the request that found out is sent again: a 404
means it never ran.

Server-to-client requests on a stream: ``ping`` is answered; ``elicitation/create`` goes to
the caller's ``on_elicit`` (an async callable returning an ``ElicitResult``); anything else
(sampling and roots are deprecated and not adopted) is refused at once with -32601, never
left to hang the call (:mod:`.server_requests`).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import uuid
from collections.abc import Mapping
from contextlib import aclosing
from typing import Any, TypeVar

import httpx
import mcp_types
from pydantic import BaseModel, ValidationError

from . import io_loop
from .body import sse_events
from .client import _tls_context
from .config import ConnectionSettings
from .deadline import AnswerDeadline
from .envelope import arguments_text, credential_headers, dump, request_body
from .errors import (
    AnswerNotDelivered,
    AuthorizationRequired,
    HTTPStatusError,
    JSONRPCError,
    MCPError,
    NotDelivered,
    ProtocolError,
    error_from_jsonrpc,
)
from .jsonparse import loads
from .listing import Listing, list_all
from .notifications import NotificationCallback, notification_handler
from .results import complete
from .server_requests import ElicitHandler, ServerRequests
from .transport import HTTPTransport, Resumption

__all__ = [
    "DEFAULT_QUESTION_DEADLINE",
    "HANDSHAKE_VERSIONS",
    "AnswerNotDelivered",
    "ElicitHandler",
    "HandshakeClient",
    "UnsupportedHandshakeVersion",
]

logger = logging.getLogger(__name__)

# Newest first: offered in this order, and the only ones accepted back.
HANDSHAKE_VERSIONS = ("2025-11-25", "2025-06-18")
# Seconds a question on the stream may wait for its answer (the server holds the call open).
DEFAULT_QUESTION_DEADLINE = 600.0

ItemT = TypeVar("ItemT", bound=BaseModel)
ResultT = TypeVar("ResultT", bound=mcp_types.Result)

SESSION_HEADER = "Mcp-Session-Id"
VERSION_HEADER = "MCP-Protocol-Version"


class UnsupportedHandshakeVersion(ProtocolError):
    """The server answered ``initialize`` with a version this client does not speak."""

    def __init__(self, version: Any) -> None:
        super().__init__(
            f"The server negotiated MCP {version!r}; mrtrweb speaks "
            f"{', '.join(HANDSHAKE_VERSIONS)} with handshake-era servers"
        )
        self.version = version


class HandshakeClient:
    """One session with a handshake-era server. Use as an async context manager."""

    def __init__(
        self,
        settings: ConnectionSettings,
        *,
        http: httpx.AsyncClient | None = None,
        on_elicit: ElicitHandler | None = None,
        versions: tuple[str, ...] = HANDSHAKE_VERSIONS,
        question_deadline: float | None = DEFAULT_QUESTION_DEADLINE,
    ) -> None:
        self.settings = settings
        self._own_http = http is None
        self._http = http or io_loop.new_http(
            connect_timeout=settings.connect_timeout,
            read_timeout=settings.read_timeout,
            verify=_tls_context(),
            keep_cookies=True,  # this session's alone
        )
        self._transport = HTTPTransport(
            settings.url,
            http=self._http,
            max_response_bytes=settings.max_response_bytes,
            max_json_depth=settings.max_json_depth,
            answer_deadline=settings.answer_deadline,
            answer_deadline_max=settings.answer_deadline_max,
        )
        self._on_elicit = on_elicit
        # The deadlines of the exchanges in flight: a question holds them while it is out.
        self._deadlines: set[AnswerDeadline] = set()
        self._server_requests = ServerRequests(
            settings.url,
            self._post_message,
            on_elicit=on_elicit,
            question_deadline=question_deadline,
            deadlines=self._deadlines,
        )
        self._versions = versions
        self._ids = itertools.count(1)
        self._id_prefix = uuid.uuid4().hex[:12]
        self.session_id: str | None = None
        # The credential headers of every request: static ones, and the authenticator's.
        self._credentials: dict[str, str] = credential_headers(settings)
        self._listener: asyncio.Task[None] | None = None
        self.initialized: mcp_types.InitializeResult | None = None
        # Sessions this client opened and closed, for callers that account for them.
        self.sessions_opened = 0
        self.sessions_closed = 0
        self.last_http_status: int | None = None

    async def __aenter__(self) -> HandshakeClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        try:
            await self.close_session()
        finally:
            if self._own_http:
                await self._http.aclose()

    @property
    def protocol_version(self) -> str | None:
        return self.initialized.protocol_version if self.initialized else None

    def _next_id(self) -> str:
        return f"{self._id_prefix}-{next(self._ids)}"

    # -- the session ------------------------------------------------------------------------

    def _capabilities(self) -> dict[str, Any]:
        """What this session declares: elicitation (the modes configured) only when someone
        answers it; never sampling or roots (deprecated, not adopted)."""
        elicitation = self.settings.capabilities.elicitation
        if self._on_elicit is None or elicitation is None:
            return {}
        return {"elicitation": dump(elicitation)}

    async def open(self) -> mcp_types.InitializeResult:
        """``initialize`` (offering the newest version), then ``notifications/initialized``."""
        if self.initialized is not None:
            return self.initialized
        await self._renew_credentials()
        request_id = self._next_id()
        body = {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "initialize",
            "params": {
                "protocolVersion": self._versions[0],
                "capabilities": self._capabilities(),
                "clientInfo": dump(self.settings.client_info),
            },
        }
        response = await self._transport.post(
            json.dumps(body).encode(), request_id, self._credentials
        )
        self.last_http_status = response.http_status
        # Taken first: whatever is wrong with the answer, a session it opened is closed.
        session_id = response.headers.get(SESSION_HEADER)
        if session_id:
            self.session_id = session_id
            self.sessions_opened += 1
        try:
            result = self._result("initialize", response.message, response.http_status)
            initialized = mcp_types.InitializeResult.model_validate(result)
        except (MCPError, ValidationError) as exc:
            await self.close_session()
            if isinstance(exc, MCPError):
                raise
            raise ProtocolError(f"initialize: malformed result: {exc.errors()[:3]}") from exc
        if initialized.protocol_version not in self._versions:
            # The server offered a version we do not speak: close what it opened, and say so.
            self.initialized = initialized
            await self.close_session()
            self.initialized = None
            raise UnsupportedHandshakeVersion(initialized.protocol_version)
        self.initialized = initialized
        await self._post_message({"jsonrpc": "2.0", "method": "notifications/initialized"})
        if self.session_id:
            await self._start_listening()
        return initialized

    async def _start_listening(self) -> None:
        """Open the session's standalone stream (a GET on the endpoint) and read it in the
        background while the session lasts. Servers send requests that belong to no request
        of ours there (the TypeScript SDK sends ``elicitation/create`` there when a tool does
        not name its request). Its headers are awaited here, so that it is open before any
        request that may need it is sent. A server without one (405) is fine."""
        headers = {"Accept": "text/event-stream", **self._session_headers()}
        request = self._http.build_request("GET", self.settings.url, headers=headers)
        try:
            async with asyncio.timeout(self.settings.connect_timeout):
                response = await self._http.send(request, stream=True)
        except (httpx.HTTPError, TimeoutError) as exc:
            logger.debug("no standalone stream from %s: %r", self.settings.url, exc)
            return
        content_type = response.headers.get("content-type", "").split(";")[0].strip()
        if response.status_code != 200 or content_type.lower() != "text/event-stream":
            await response.aclose()
            return
        self._listener = asyncio.create_task(self._listen(response))

    async def _listen(self, response: httpx.Response) -> None:
        """Answer the server's requests on the standalone stream. Never raises: a broken
        listener must not break a call."""
        try:
            async with aclosing(sse_events(response, self.settings.max_response_bytes)) as events:
                async for event in events:
                    if not event.is_message:
                        continue
                    try:
                        message = loads(event.data, max_depth=self.settings.max_json_depth)
                    except ValueError:
                        logger.warning("invalid JSON on the standalone stream; ignored")
                        continue
                    if isinstance(message, dict) and "method" in message and "id" in message:
                        await self._server_requests.answer(message)
        except (MCPError, httpx.HTTPError) as exc:
            logger.info("the standalone stream from %s ended: %r", self.settings.url, exc)
        finally:
            await response.aclose()

    async def close_session(self) -> None:
        """``DELETE`` the session, if the server gave one. Never raises: a call's outcome must
        not hinge on it, and a server that refuses (405) keeps it until it expires."""
        await self._stop_listening()
        session_id, self.session_id = self.session_id, None
        version = self.protocol_version
        self.initialized = None
        if not session_id:
            return
        headers = {**self._credentials, SESSION_HEADER: session_id}
        if version:
            headers[VERSION_HEADER] = version
        status = await self._transport.end_session(headers)
        if status is not None and (status < 300 or status == 404):
            self.sessions_closed += 1  # 404: already gone
        elif status is not None:
            logger.info("%s kept MCP session open (HTTP %s to DELETE)", self.settings.url, status)

    async def _renew_credentials(self) -> None:
        headers = credential_headers(self.settings)
        authenticator = self.settings.authenticator
        if authenticator is not None:
            headers |= dict(await authenticator.headers())
        self._credentials = headers

    def _session_headers(self) -> dict[str, str]:
        headers = dict(self._credentials)
        if self.session_id:
            headers[SESSION_HEADER] = self.session_id
        if self.initialized is not None:
            headers[VERSION_HEADER] = self.initialized.protocol_version
        return headers

    async def _post_message(self, message: Mapping[str, Any]) -> None:
        """POST a notification or a response to a server request (answered 202, no body)."""
        headers = {
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            **self._session_headers(),
        }
        request = self._http.build_request(
            "POST", self.settings.url, content=json.dumps(message).encode(), headers=headers
        )
        try:
            # Streamed and never read: the answer is 202 with no body, and a server that
            # sends one anyway is not read into memory.
            response = await self._http.send(request, stream=True)
            await response.aclose()
        except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
            raise NotDelivered(f"Could not reach {self.settings.url}: {exc}") from exc
        except httpx.HTTPError as exc:
            what = message.get("method") or "a response"
            raise ProtocolError(f"Sending {what} failed: {exc}") from exc
        if response.status_code >= 400:
            raise HTTPStatusError(response.status_code, "")

    # -- one request ------------------------------------------------------------------------

    async def request(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        raw_params: Mapping[str, str] | None = None,
        on_notification: NotificationCallback | None = None,
    ) -> dict[str, Any]:
        """Send one request in the session (opening it first) and return its ``result``.

        Sent again (nothing ran) at most once after the server forgot the session (404), and
        at most once after it refused the credentials, if the authenticator renewed them.
        """
        gone = refused = False
        while True:
            try:
                await self.open()
                return await self._send(method, params, raw_params, on_notification)
            except (HTTPStatusError, JSONRPCError) as exc:
                if gone or not self._session_gone(exc):
                    raise
                gone = True
                # The server lost the session (restart, expiry): the request never ran.
                logger.info("%s forgot MCP session; opening a new one", self.settings.url)
                await self._forget_session()
            except AuthorizationRequired as exc:
                authenticator = self.settings.authenticator
                status = exc.http_status or 401
                if (
                    refused
                    or authenticator is None
                    or not await authenticator.challenged(status, exc.www_authenticate)
                ):
                    raise
                refused = True
                await self._renew_credentials()

    async def _forget_session(self) -> None:
        await self._stop_listening()
        self.session_id = None
        self.initialized = None

    async def _stop_listening(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await listener

    def _session_gone(self, exc: MCPError) -> bool:
        status = getattr(exc, "http_status", None)
        if status != 404 or self.session_id is None:
            return False
        return not (isinstance(exc, JSONRPCError) and exc.code == mcp_types.METHOD_NOT_FOUND)

    async def _send(
        self,
        method: str,
        params: Mapping[str, Any] | None,
        raw_params: Mapping[str, str] | None,
        on_notification: NotificationCallback | None,
    ) -> dict[str, Any]:
        request_id = self._next_id()
        body_params = dict(params or {})
        if on_notification is not None:
            body_params["_meta"] = {"progressToken": f"progress-{uuid.uuid4().hex[:16]}"}
        body = request_body(request_id, method, body_params, raw_params or {})
        headers = self._session_headers()
        response = await self._transport.post(
            body,
            request_id,
            headers,
            notification_handler(on_notification),
            on_request=self._server_requests.answer,
            resumption=Resumption(headers) if self.session_id else None,
            deadlines=self._deadlines,
        )
        self.last_http_status = response.http_status
        return self._result(method, response.message, response.http_status)

    @staticmethod
    def _result(method: str, message: dict[str, Any], http_status: int) -> dict[str, Any]:
        error = message.get("error")
        if error is not None:
            if not isinstance(error, dict):
                raise ProtocolError(f"{method}: the error is not an object")
            raise error_from_jsonrpc(error, sent_request_state=False, http_status=http_status)
        result = message.get("result")
        if not isinstance(result, dict):
            raise ProtocolError(f"{method}: the result is not an object")
        return result

    # -- operations -------------------------------------------------------------------------

    async def _list(self, method: str, key: str, model: type[ItemT]) -> Listing[ItemT]:
        return await list_all(self.request, method, key, model)

    async def list_tools(self) -> Listing[mcp_types.Tool]:
        return await self._list("tools/list", "tools", mcp_types.Tool)

    async def list_prompts(self) -> Listing[mcp_types.Prompt]:
        return await self._list("prompts/list", "prompts", mcp_types.Prompt)

    async def list_resources(self) -> Listing[mcp_types.Resource]:
        return await self._list("resources/list", "resources", mcp_types.Resource)

    async def list_resource_templates(self) -> Listing[mcp_types.ResourceTemplate]:
        return await self._list(
            "resources/templates/list", "resourceTemplates", mcp_types.ResourceTemplate
        )

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | str | None = None,
        *,
        on_notification: NotificationCallback | None = None,
    ) -> mcp_types.CallToolResult:
        """Call a tool; ``arguments`` may be JSON text, sent exactly as given."""
        text, _ = arguments_text(arguments)
        result = await self.request(
            "tools/call",
            {"name": name},
            raw_params={"arguments": text} if text is not None else None,
            on_notification=on_notification,
        )
        return complete("tools/call", result, mcp_types.CallToolResult)

    async def get_prompt(
        self,
        name: str,
        arguments: Mapping[str, str] | str | None = None,
        *,
        on_notification: NotificationCallback | None = None,
    ) -> mcp_types.GetPromptResult:
        text, _ = arguments_text(arguments)
        result = await self.request(
            "prompts/get",
            {"name": name},
            raw_params={"arguments": text} if text is not None else None,
            on_notification=on_notification,
        )
        return complete("prompts/get", result, mcp_types.GetPromptResult)

    async def read_resource(
        self, uri: str, *, on_notification: NotificationCallback | None = None
    ) -> mcp_types.ReadResourceResult:
        result = await self.request("resources/read", {"uri": uri}, on_notification=on_notification)
        return complete("resources/read", result, mcp_types.ReadResourceResult)
