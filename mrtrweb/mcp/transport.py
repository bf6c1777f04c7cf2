"""One JSON-RPC request per HTTP POST, answered as JSON or as an SSE stream.

The transport knows the HTTP rules only: it sends bytes with headers and
returns the JSON-RPC response message whose id matches, or raises. Meaning
(results, error classes) is the client's business.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from contextlib import aclosing
from typing import Any

import httpx

from .body import read_body, sse_events
from .deadline import AnswerDeadline
from .errors import (
    AuthenticationRequired,
    HTTPStatusError,
    NotDelivered,
    OutcomeUnknown,
    ProtocolError,
    Redirected,
    ServerBusy,
)
from .jsonparse import DEFAULT_MAX_DEPTH, loads
from .oneline import one_line
from .retry_after import retry_after_seconds
from .unfit import unfit

__all__ = ["HTTPTransport", "NotificationHandler", "RawResponse", "RequestHandler", "Resumption"]

logger = logging.getLogger(__name__)

NotificationHandler = Callable[[dict[str, Any]], Awaitable[None] | None]
# A server-to-client request on the stream (handshake era only): the handler answers it.
RequestHandler = Callable[[dict[str, Any]], Awaitable[None]]


class Resumption:
    """How a handshake-era stream that ends before its answer is resumed (SEP-1699): a GET on
    the endpoint with ``headers`` (the session's) and ``Last-Event-ID``, after the ``retry`` the
    server set. Only where the server gave the stream an event id; at most ``attempts`` GETs
    that bring nothing new in a row."""

    __slots__ = ("attempts", "default_retry_ms", "headers")

    def __init__(
        self, headers: Mapping[str, str], *, attempts: int = 3, default_retry_ms: int = 1000
    ) -> None:
        self.headers = dict(headers)
        self.attempts = attempts
        self.default_retry_ms = default_retry_ms


ACCEPT = "application/json, text/event-stream"


class RawResponse:
    """The JSON-RPC response message and the HTTP status it came with."""

    __slots__ = ("headers", "http_status", "message")

    def __init__(
        self,
        message: dict[str, Any],
        http_status: int,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.message = message
        self.http_status = http_status
        # The response's headers (the handshake era reads Mcp-Session-Id from them).
        self.headers: Mapping[str, str] = headers or {}


# 429 and 503 say the request was not handled, so resending is safe; a 500, 502 or 504 without a
# JSON-RPC error may come from a server (or its upstream) that failed while acting on it.
_NOT_HANDLED = frozenset({429, 503})
_MAYBE_HANDLED = frozenset({500, 502, 504})


def _is_jsonrpc_response(message: Any) -> bool:
    return (
        isinstance(message, dict)
        and "id" in message
        and ("result" in message or "error" in message)
    )


class _StreamOptions:
    """What one exchange needs beyond the 2026-07-28 rules, and what it learnt on the way."""

    __slots__ = ("last_event_id", "on_request", "resumption", "retry_ms", "streams")

    def __init__(self, on_request: RequestHandler | None, resumption: Resumption | None) -> None:
        self.on_request = on_request
        self.resumption = resumption
        self.last_event_id: str | None = None
        self.retry_ms: int | None = None
        self.streams: list[httpx.Response] = []


class HTTPTransport:
    """Posts JSON-RPC requests to one Streamable HTTP endpoint."""

    def __init__(
        self,
        url: str,
        *,
        http: httpx.AsyncClient,
        max_response_bytes: int,
        max_json_depth: int = DEFAULT_MAX_DEPTH,
        answer_deadline: float | None = None,
        answer_deadline_max: float | None = None,
    ) -> None:
        self.url = url
        self._http = http
        self._limit = max_response_bytes
        self._depth = max_json_depth
        self._deadline = answer_deadline
        self._deadline_max = answer_deadline_max

    async def post(
        self,
        body: bytes,
        request_id: str | int,
        headers: Mapping[str, str],
        on_notification: NotificationHandler | None = None,
        *,
        on_request: RequestHandler | None = None,
        resumption: Resumption | None = None,
        deadlines: set[AnswerDeadline] | None = None,
    ) -> RawResponse:
        """Send one request and return its response, all within the answer deadline.

        ``on_request``, ``resumption`` and ``deadlines`` are the handshake era's:
        server-to-client requests on the stream, resuming a stream the server closed early,
        and the set this exchange's deadline is in while it runs (so a question, wherever it
        came, can hold it).
        """
        async with AnswerDeadline(self._deadline, self._deadline_max) as deadline:
            if deadlines is not None:
                deadlines.add(deadline)
            try:
                return await self._exchange(
                    body,
                    request_id,
                    headers,
                    on_notification,
                    deadline,
                    _StreamOptions(on_request, resumption),
                )
            finally:
                if deadlines is not None:
                    deadlines.discard(deadline)

    async def _exchange(
        self,
        body: bytes,
        request_id: str | int,
        headers: Mapping[str, str],
        on_notification: NotificationHandler | None,
        deadline: AnswerDeadline,
        options: _StreamOptions,
    ) -> RawResponse:
        all_headers = {"Accept": ACCEPT, "Content-Type": "application/json", **headers}
        request = self._http.build_request("POST", self.url, content=body, headers=all_headers)
        try:
            response = await self._http.send(request, stream=True)
        except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
            raise NotDelivered(f"Could not reach {self.url}: {exc or type(exc).__name__}") from exc
        except httpx.UnsupportedProtocol as exc:
            raise NotDelivered(f"Unsupported URL {self.url}: {exc}") from exc
        except (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError) as exc:
            raise OutcomeUnknown(
                f"The request to {self.url} was sent but no answer came: "
                f"{exc or type(exc).__name__}"
            ) from exc
        try:
            answer = await self._read(response, request_id, on_notification, deadline, options)
        except (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError) as exc:
            raise OutcomeUnknown(
                f"The answer from {self.url} broke off: {exc or type(exc).__name__}",
                http_status=response.status_code,
            ) from exc
        finally:
            # Closing an SSE stream early is how HTTP cancels; here it just frees the connection.
            await response.aclose()
            for resumed in options.streams:
                await resumed.aclose()
        # NaN, infinities and lone surrogates parse, then break the database and the pages.
        why = unfit(answer.message)
        if why is not None:
            raise ProtocolError(f"The server's answer holds {why}")
        return answer

    async def _read(
        self,
        response: httpx.Response,
        request_id: str | int,
        on_notification: NotificationHandler | None,
        deadline: AnswerDeadline,
        options: _StreamOptions,
    ) -> RawResponse:
        status = response.status_code
        if status in (401, 403):
            raise AuthenticationRequired(status, response.headers.get("www-authenticate"))
        if 300 <= status < 400:
            location = response.headers.get("location")
            raise Redirected(status, one_line(location, 300) if location else None)
        if status in _NOT_HANDLED:
            body = await read_body(response, self._limit)
            raise ServerBusy(
                status,
                retry_after_seconds(response.headers.get("retry-after")),
                body[:200].decode("utf-8", errors="replace"),
            )
        content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if content_type == "text/event-stream" and status < 400:
            return await self._read_stream(response, request_id, on_notification, deadline, options)
        body = await read_body(response, self._limit)
        if content_type != "application/json":
            if status in _MAYBE_HANDLED:
                raise self._maybe_handled(status, body)
            if status >= 400:
                raise HTTPStatusError(status, body[:200].decode("utf-8", errors="replace"))
            if status == 202:
                raise ProtocolError("The server answered a request with 202 Accepted and no body")
            raise ProtocolError(f"Unexpected content type {content_type!r} (HTTP {status})")
        try:
            # TooDeeplyNested is no ValueError: it is reported as itself, whatever the status.
            message = loads(body, max_depth=self._depth)
        except ValueError as exc:
            if status in _MAYBE_HANDLED:
                raise self._maybe_handled(status, body) from exc
            if status >= 400:
                raise HTTPStatusError(status, body[:200].decode("utf-8", errors="replace")) from exc
            raise ProtocolError(f"The server sent invalid JSON (HTTP {status})") from exc
        if not _is_jsonrpc_response(message):
            if status in _MAYBE_HANDLED:
                raise self._maybe_handled(status, body)
            if status >= 400:
                raise HTTPStatusError(status, body[:200].decode("utf-8", errors="replace"))
            raise ProtocolError("The server's answer is not a JSON-RPC response")
        self._check_id(message, request_id)
        return RawResponse(message, status, response.headers)

    async def _read_stream(
        self,
        response: httpx.Response,
        request_id: str | int,
        on_notification: NotificationHandler | None,
        deadline: AnswerDeadline,
        options: _StreamOptions,
    ) -> RawResponse:
        headers = response.headers
        stream: httpx.Response | None = response
        fruitless = 0
        while stream is not None:
            answer, progressed = await self._read_events(
                stream, request_id, on_notification, deadline, options
            )
            if answer is not None:
                return RawResponse(answer, response.status_code, headers)
            fruitless = 0 if progressed else fruitless + 1
            stream = await self._resume(options, stream, fruitless)
        raise OutcomeUnknown(
            f"The stream from {self.url} ended before the response arrived",
            http_status=response.status_code,
        )

    async def _read_events(
        self,
        response: httpx.Response,
        request_id: str | int,
        on_notification: NotificationHandler | None,
        deadline: AnswerDeadline,
        options: _StreamOptions,
    ) -> tuple[dict[str, Any] | None, bool]:
        """The response read from one stream (None if it ended first), and whether any
        message came on it."""
        progressed = False
        # aclosing: the reader stops with the exchange, not whenever the generator is collected.
        async with aclosing(sse_events(response, self._limit)) as events:
            async for event in events:
                if event.last_event_id is not None:
                    options.last_event_id = event.last_event_id
                if event.retry is not None:
                    options.retry_ms = event.retry
                if not event.is_message:
                    continue  # a priming event, a comment-like empty event: nothing to read
                progressed = True
                try:
                    message = loads(event.data, max_depth=self._depth)
                except ValueError as exc:
                    raise ProtocolError("The server sent invalid JSON in an SSE event") from exc
                if _is_jsonrpc_response(message):
                    self._check_id(message, request_id)
                    return message, True
                if isinstance(message, dict) and "method" in message and "id" not in message:
                    if message["method"] == "notifications/progress":
                        deadline.progressed()  # comments and log messages do not extend it
                    if on_notification is not None:
                        outcome = on_notification(message)
                        if outcome is not None:
                            await outcome
                    continue
                if isinstance(message, dict) and "method" in message:
                    if options.on_request is not None:
                        await options.on_request(message)
                        continue
                    # 2026-07-28 has no server-to-client requests on the stream.
                    logger.warning(
                        "ignoring a server request on the stream: %r", message.get("method")
                    )
                    continue
                raise ProtocolError("The server sent a message that is not JSON-RPC on the stream")
        return None, progressed

    async def _resume(
        self, options: _StreamOptions, previous: httpx.Response, fruitless: int
    ) -> httpx.Response | None:
        """The GET that resumes an ended stream, or None when it cannot or should not be."""
        resumption = options.resumption
        if resumption is None or options.last_event_id is None:
            return None
        await previous.aclose()
        if fruitless > resumption.attempts:
            return None
        retry_ms = options.retry_ms if options.retry_ms is not None else resumption.default_retry_ms
        # The server said how long to wait (SSE `retry:`); a hostile one cannot park us for
        # ever: the answer deadline still runs.
        await asyncio.sleep(max(retry_ms, 0) / 1000)
        headers = {
            "Accept": "text/event-stream",
            **resumption.headers,
            "Last-Event-ID": options.last_event_id,
        }
        try:
            stream = await self._http.send(
                self._http.build_request("GET", self.url, headers=headers), stream=True
            )
        except (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError):
            return None
        content_type = stream.headers.get("content-type", "").split(";")[0].strip().lower()
        if stream.status_code != 200 or content_type != "text/event-stream":
            # 405: the server offers no GET stream; anything else: it cannot resume this one.
            await stream.aclose()
            return None
        options.streams.append(stream)
        return stream

    async def end_session(self, headers: Mapping[str, str]) -> int | None:
        """DELETE a handshake-era session (``headers`` name it); the status, None if no answer
        came. Never raises: ending a session is tidying up, not part of any outcome."""
        try:
            request = self._http.build_request("DELETE", self.url, headers=dict(headers))
            response = await self._http.send(request, stream=True)
            await response.aclose()  # the body, if any, is never read
        except httpx.HTTPError as exc:
            logger.warning("could not end the MCP session at %s: %s", self.url, exc)
            return None
        return response.status_code

    def _maybe_handled(self, status: int, body: bytes) -> OutcomeUnknown:
        excerpt = body[:200].decode("utf-8", errors="replace")
        return OutcomeUnknown(
            f"{self.url} answered HTTP {status} without a JSON-RPC error: {excerpt!r}",
            http_status=status,
        )

    @staticmethod
    def _check_id(message: dict[str, Any], request_id: str | int) -> None:
        # An error may come before the server could read our id (some answer null,
        # some a placeholder such as "server-error"), so only results must match.
        if message.get("id") != request_id and "error" not in message:
            raise ProtocolError(
                f"The response id {message.get('id')!r} does not match the request {request_id!r}"
            )
