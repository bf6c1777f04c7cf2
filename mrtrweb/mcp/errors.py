"""The errors a caller of the MCP client can act on.

The hierarchy is shaped by what the caller should *do*, not by where the
error came from:

- ``JSONRPCError`` and its subclasses: the server answered with a JSON-RPC
  error. Each subclass names one action (re-list tools, pick another version,
  declare a capability, start the call again, ...).
- ``AuthorizationRequired``: 401/403; a credentials problem, never an era signal. Nothing ran,
  so it is a ``NotDelivered``; ``AuthenticationRequired`` is the one raised when the connection
  has no authenticator to renew them.
- ``LegacyServer``: the endpoint speaks only the handshake era (2025-11-25 or older): use
  :class:`mrtrweb.mcp.handshake.HandshakeClient` for it.
- ``Redirected``: a 3xx; redirects are never followed (they could take the request, and its
  credentials, elsewhere), so the connection's URL needs changing.
- ``TransportError``: the exchange itself failed. ``NotDelivered`` means the
  request provably never reached the server, so resending is safe;
  ``OutcomeUnknown`` means it may have been processed, so a blind resend could
  run a tool twice; ``DeadlineExceeded`` is one: no answer within the connection's deadline.
- ``ProtocolError``: the peer said something this revision does not allow;
  ``TooDeeplyNested`` is one: JSON nested deeper than the client reads.

Every error that came with an HTTP status carries it as ``http_status`` (``None`` when no
answer arrived or the status is unknown), whatever its class.
"""

from __future__ import annotations

from typing import Any

import mcp_types

__all__ = [
    "AnswerNotDelivered",
    "AuthenticationRequired",
    "AuthorizationRequired",
    "DeadlineExceeded",
    "HTTPStatusError",
    "HeaderMismatch",
    "InvalidParams",
    "InvalidRequestState",
    "JSONRPCError",
    "LegacyServer",
    "MCPError",
    "MethodNotFound",
    "MissingClientCapability",
    "NotDelivered",
    "OutcomeUnknown",
    "ProtocolError",
    "Redirected",
    "ResourceNotFound",
    "ResponseTooLarge",
    "ServerBusy",
    "TooDeeplyNested",
    "TransportError",
    "UnsupportedInputRequest",
    "UnsupportedProtocolVersion",
    "error_from_jsonrpc",
]

# -32002 is retired in 2026-07-28 but older servers still send it for a missing resource.
LEGACY_RESOURCE_NOT_FOUND = -32002


class MCPError(Exception):
    """Base of every error raised by :mod:`mrtrweb.mcp`."""


class ProtocolError(MCPError):
    """The server's answer breaks the protocol (bad JSON, bad shape, wrong id, ...)."""


class TooDeeplyNested(ProtocolError):
    """The server sent JSON nested deeper than the limit; it was not parsed.

    A protocol error like garbage: a first request fails, a resubmission's outcome is unknown
    (the server may have acted before answering with it).
    """

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"The server's answer is nested more than {limit} levels deep, "
            "deeper than mrtrweb reads"
        )
        self.limit = limit


class UnsupportedInputRequest(ProtocolError):
    """An ``InputRequiredResult`` asks for something this client did not declare or cannot parse.

    The raw result is kept so a caller can still show the round as unsupported
    and let a person abandon the call, instead of losing it.
    """

    def __init__(self, message: str, *, raw_result: dict[str, Any], keys: list[str]) -> None:
        super().__init__(message)
        self.raw_result = raw_result
        self.keys = keys

    @property
    def request_state(self) -> str | None:
        state = self.raw_result.get("requestState")
        return state if isinstance(state, str) else None


class JSONRPCError(MCPError):
    """The server answered with a JSON-RPC error object."""

    def __init__(
        self, code: int, message: str, data: Any = None, *, http_status: int | None = None
    ) -> None:
        super().__init__(f"{message} (JSON-RPC {code})")
        self.code = code
        self.message = message
        self.data = data
        self.http_status = http_status


class HeaderMismatch(JSONRPCError):
    """-32020: the HTTP headers disagree with the body. Re-list the tools and retry once."""


class MissingClientCapability(JSONRPCError):
    """-32021: the server needs a client capability this request did not declare."""

    @property
    def required_capabilities(self) -> mcp_types.ClientCapabilities | None:
        if isinstance(self.data, dict) and isinstance(self.data.get("requiredCapabilities"), dict):
            try:
                return mcp_types.ClientCapabilities.model_validate(
                    self.data["requiredCapabilities"]
                )
            except ValueError:
                return None
        return None


class UnsupportedProtocolVersion(JSONRPCError):
    """-32022: the server does not speak the version sent; ``supported`` lists what it does."""

    @property
    def supported(self) -> list[str]:
        if isinstance(self.data, dict) and isinstance(self.data.get("supported"), list):
            return [v for v in self.data["supported"] if isinstance(v, str)]
        return []

    @property
    def requested(self) -> str | None:
        requested = self.data.get("requested") if isinstance(self.data, dict) else None
        return requested if isinstance(requested, str) else None


class MethodNotFound(JSONRPCError):
    """-32601: the server does not implement this method."""


class InvalidParams(JSONRPCError):
    """-32602: the server rejected the request's params."""


class InvalidRequestState(InvalidParams):
    """-32602 on a retry that carried ``requestState``: the parked round is dead.

    Never resend that state; start the call again from scratch.
    """


class ResourceNotFound(JSONRPCError):
    """-32002 from an older server: the resource does not exist."""


class HTTPStatusError(MCPError):
    """An HTTP error status whose body is not a JSON-RPC error."""

    def __init__(self, status: int, body_excerpt: str) -> None:
        super().__init__(f"HTTP {status} without a JSON-RPC error body: {body_excerpt!r}")
        self.http_status = status
        self.body_excerpt = body_excerpt


class Redirected(MCPError):
    """A 3xx answer. Not followed: the request and its bearer token stay with the URL an
    operator configured. ``location`` is the Location header, made safe to show."""

    def __init__(self, status: int, location: str | None) -> None:
        where = f"to {location}" if location else "without saying where (no Location)"
        super().__init__(
            f"The server redirected {where}; redirects are not followed (HTTP {status})"
        )
        self.http_status = status
        self.location = location


class LegacyServer(MCPError):
    """The server speaks only the handshake era (MCP 2025-11-25 or older)."""

    def __init__(self, url: str, detail: str) -> None:
        super().__init__(
            f"{url} is a handshake-era MCP server ({detail}): it is spoken to with "
            "mrtrweb.mcp.handshake, not with this 2026-07-28 client"
        )
        self.url = url
        self.detail = detail


class ResponseTooLarge(MCPError):
    """The response exceeded the connection's size limit and was not loaded."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"The response exceeded the limit of {limit} bytes")
        self.limit = limit


class TransportError(MCPError):
    """The HTTP exchange failed. ``http_status`` is the status, when one arrived."""

    def __init__(self, message: str, *, http_status: int | None = None) -> None:
        super().__init__(message)
        self.http_status = http_status


class NotDelivered(TransportError):
    """The request was never handled: refused connection, DNS, connect or pool timeout, or a
    429/503 answer (see :class:`ServerBusy`). Resending is safe.
    """


class AuthorizationRequired(NotDelivered):
    """401, or 403: the server ran nothing, and the credentials must be obtained or renewed.

    Raised when a connection has no authenticator, when its authenticator gave up (it could
    not renew them without a person, or the server kept refusing within the retry limits), or
    when the authenticator itself needs a person before the request can be sent.
    ``www_authenticate`` is the server's challenge, as sent.
    """

    def __init__(
        self,
        message: str,
        *,
        http_status: int | None = None,
        www_authenticate: str | None = None,
    ) -> None:
        super().__init__(message, http_status=http_status)
        self.www_authenticate = www_authenticate


class AuthenticationRequired(AuthorizationRequired):
    """401 or 403 on a connection without an authenticator (no credentials, or static ones):
    the credentials are missing, invalid or insufficient, and nothing here can renew them."""

    def __init__(self, status: int, www_authenticate: str | None) -> None:
        what = "rejected the credentials (401)" if status == 401 else "refused access (403)"
        super().__init__(
            f"The server {what}", http_status=status, www_authenticate=www_authenticate
        )


class ServerBusy(NotDelivered):
    """429 Too Many Requests or 503 Service Unavailable: the server declined to handle the
    request (RFC 9110 section 15.6.4, RFC 6585). ``retry_after`` is its Retry-After, in
    seconds, when it sent one.
    """

    def __init__(self, status: int, retry_after: float | None, body_excerpt: str) -> None:
        wait = f", retry after {retry_after:g} s" if retry_after is not None else ""
        super().__init__(f"HTTP {status}{wait}: {body_excerpt!r}", http_status=status)
        self.retry_after = retry_after


class OutcomeUnknown(TransportError):
    """The request left, but no usable answer came back (read timeout, broken stream, or a
    500/502/504 without a JSON-RPC error). The server may have acted on it; do not resend
    blindly.
    """


class AnswerNotDelivered(OutcomeUnknown):
    """A handshake-era server's request on the stream could not be answered (the server went
    away, or forgot the session): it never got the answer, though the request it asked it
    in may have done things before."""


class DeadlineExceeded(OutcomeUnknown):
    """No answer within the connection's deadline (progress notifications extend it, up to a
    cap). The request was cancelled by closing its stream, but the server may have acted."""

    def __init__(self, message: str, *, seconds: float | None) -> None:
        super().__init__(message)
        self.seconds = seconds


_BY_CODE: dict[int, type[JSONRPCError]] = {
    mcp_types.HEADER_MISMATCH: HeaderMismatch,
    mcp_types.MISSING_REQUIRED_CLIENT_CAPABILITY: MissingClientCapability,
    mcp_types.UNSUPPORTED_PROTOCOL_VERSION: UnsupportedProtocolVersion,
    mcp_types.METHOD_NOT_FOUND: MethodNotFound,
    mcp_types.INVALID_PARAMS: InvalidParams,
    LEGACY_RESOURCE_NOT_FOUND: ResourceNotFound,
}


def _is_request_state_rejection(message: str, data: Any) -> bool:
    # Neither the reason nor the wording is spec; both are the SDK's conventions,
    # which fastmcp shares. A -32602 on a retry without either is still treated
    # as a dead state by the caller that knows it sent one.
    if isinstance(data, dict) and data.get("reason") == "invalid_request_state":
        return True
    return "requeststate" in message.replace(" ", "").lower()


def error_from_jsonrpc(
    error: dict[str, Any], *, sent_request_state: bool, http_status: int | None = None
) -> JSONRPCError:
    """Turn a JSON-RPC ``error`` object into the matching exception."""
    code = error.get("code")
    message = error.get("message")
    if not isinstance(code, int) or isinstance(code, bool):
        raise ProtocolError(f"JSON-RPC error without an integer code: {error!r}")
    if not isinstance(message, str):
        message = ""
    data = error.get("data")
    cls = _BY_CODE.get(code, JSONRPCError)
    if cls is InvalidParams and sent_request_state and _is_request_state_rejection(message, data):
        cls = InvalidRequestState
    return cls(code, message, data, http_status=http_status)
