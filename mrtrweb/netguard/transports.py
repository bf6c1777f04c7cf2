"""httpx transports whose every connection goes through a guarded network backend.

httpx takes a network backend from no public argument, so these are custom transports (the
extension point httpx documents): each owns an httpcore connection pool built on the backend,
hands it each request and hands back its response, its body streamed. They use no proxy, from
the environment or otherwise: a proxy's address would be the only one the backend vetted.
"""

from __future__ import annotations

import contextlib
import ssl
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator

import httpcore
import httpx

from .backends import AsyncGuardedBackend, GuardedBackend

# Most specific first: the first class an httpcore error is an instance of names its httpx
# counterpart (httpcore.ConnectTimeout is a TimeoutException too, and must stay a connect one).
ERRORS: tuple[tuple[type[Exception], type[httpx.TransportError]], ...] = (
    (httpcore.ConnectTimeout, httpx.ConnectTimeout),
    (httpcore.ReadTimeout, httpx.ReadTimeout),
    (httpcore.WriteTimeout, httpx.WriteTimeout),
    (httpcore.PoolTimeout, httpx.PoolTimeout),
    (httpcore.TimeoutException, httpx.TimeoutException),
    (httpcore.ConnectError, httpx.ConnectError),
    (httpcore.ReadError, httpx.ReadError),
    (httpcore.WriteError, httpx.WriteError),
    (httpcore.NetworkError, httpx.NetworkError),
    (httpcore.RemoteProtocolError, httpx.RemoteProtocolError),
    (httpcore.LocalProtocolError, httpx.LocalProtocolError),
    (httpcore.ProtocolError, httpx.ProtocolError),
    (httpcore.ProxyError, httpx.ProxyError),
    (httpcore.UnsupportedProtocol, httpx.UnsupportedProtocol),
)

# httpcore's default pool size; an asynchronous client serves one MCP connection's OAuth.
ASYNC_CONNECTIONS = 10


@contextlib.contextmanager
def httpx_errors() -> Iterator[None]:
    """Re-raise httpcore's errors as httpx's, the original as the cause (``was_refused``
    follows it to a refusal of the address rules)."""
    try:
        yield
    except Exception as exc:
        for raised, mapped in ERRORS:
            if isinstance(exc, raised):
                raise mapped(str(exc)) from exc
        raise


def core_request(request: httpx.Request) -> httpcore.Request:
    return httpcore.Request(
        method=request.method,
        url=httpcore.URL(
            scheme=request.url.raw_scheme,
            host=request.url.raw_host,
            port=request.url.port,
            target=request.url.raw_path,
        ),
        headers=request.headers.raw,
        content=request.stream,
        # httpx's timeouts travel here ("timeout"), and httpcore reads them from here.
        extensions=request.extensions,
    )


class ResponseBody(httpx.SyncByteStream):
    def __init__(self, stream: Iterable[bytes]) -> None:
        self.stream = stream

    def __iter__(self) -> Iterator[bytes]:
        with httpx_errors():
            yield from self.stream

    def close(self) -> None:
        # Closing returns the connection to the pool, read to the end or not.
        close = getattr(self.stream, "close", None)
        if close is not None:
            close()


class AsyncResponseBody(httpx.AsyncByteStream):
    def __init__(self, stream: AsyncIterable[bytes]) -> None:
        self.stream = stream

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with httpx_errors():
            async for part in self.stream:
                yield part

    async def aclose(self) -> None:
        aclose = getattr(self.stream, "aclose", None)
        if aclose is not None:
            await aclose()


def httpx_response(
    response: httpcore.Response, body: httpx.SyncByteStream | httpx.AsyncByteStream
) -> httpx.Response:
    return httpx.Response(
        status_code=response.status,
        headers=response.headers,
        stream=body,
        extensions=response.extensions,
    )


class GuardedTransport(httpx.BaseTransport):
    """Requests sent through ``backend`` only, over a pool of at most ``max_connections``."""

    def __init__(
        self, backend: GuardedBackend, *, ssl_context: ssl.SSLContext, max_connections: int
    ) -> None:
        self.pool = httpcore.ConnectionPool(
            ssl_context=ssl_context, max_connections=max_connections, network_backend=backend
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        with httpx_errors():
            response = self.pool.handle_request(core_request(request))
        assert isinstance(response.stream, Iterable)
        return httpx_response(response, ResponseBody(response.stream))

    def close(self) -> None:
        self.pool.close()


class AsyncGuardedTransport(httpx.AsyncBaseTransport):
    """The asynchronous :class:`GuardedTransport`."""

    def __init__(
        self, backend: AsyncGuardedBackend, *, ssl_context: ssl.SSLContext, max_connections: int
    ) -> None:
        self.pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl_context, max_connections=max_connections, network_backend=backend
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        with httpx_errors():
            response = await self.pool.handle_async_request(core_request(request))
        assert isinstance(response.stream, AsyncIterable)
        return httpx_response(response, AsyncResponseBody(response.stream))

    async def aclose(self) -> None:
        await self.pool.aclose()


def sync_transport(backend: GuardedBackend, *, max_connections: int = 1) -> GuardedTransport:
    """An httpx transport that connects through ``backend`` only."""
    return GuardedTransport(
        backend,
        ssl_context=httpx.create_ssl_context(trust_env=False),
        max_connections=max_connections,
    )


def async_transport(
    backend: AsyncGuardedBackend, *, verify: ssl.SSLContext
) -> AsyncGuardedTransport:
    """The asynchronous transport through ``backend``, its certificates checked by ``verify``."""
    return AsyncGuardedTransport(backend, ssl_context=verify, max_connections=ASYNC_CONNECTIONS)
