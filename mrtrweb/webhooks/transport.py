"""The HTTP client webhooks are sent with: short timeouts, no redirects, no proxies from the
environment, and a network backend that only connects to addresses the rules allow."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import httpcore
import httpx

from . import destinations


class Refused(httpcore.ConnectError):
    """Raised instead of connecting; httpx re-raises it as ``httpx.ConnectError`` from this."""


class GuardedBackend(httpcore.NetworkBackend):
    """Resolves the host itself, checks every address, and connects to a vetted one, so the
    address checked is the address used (no window for DNS rebinding)."""

    def __init__(self) -> None:
        self._inner = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        try:
            addresses = destinations.resolve(host, port)
        except (OSError, UnicodeError) as exc:  # UnicodeError: a name IDNA cannot encode
            raise httpcore.ConnectError(f"cannot resolve {host}: {exc}") from exc
        if not addresses:
            raise httpcore.ConnectError(f"{host} resolves to no address")
        for address in addresses:
            reason = destinations.refusal(address)
            if reason is not None:
                raise Refused(f"webhook destination refused: {reason}")
        last: Exception | None = None
        for address in addresses:
            try:
                return self._inner.connect_tcp(
                    str(address),
                    port,
                    timeout=timeout,
                    local_address=local_address,
                    socket_options=socket_options,
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last = exc
        assert last is not None
        raise last

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        raise Refused("webhooks are never sent to a unix socket")

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def was_refused(exc: BaseException) -> bool:
    """Whether an httpx error came from the destination rules rather than the network."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, Refused):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def client(timeout: float) -> httpx.Client:
    transport = httpx.HTTPTransport(trust_env=False)
    # httpx has no public hook for the network backend; its pool is rebuilt with ours
    # (tests/webhooks prove the guard is in the path).
    transport._pool.close()
    transport._pool = httpcore.ConnectionPool(
        ssl_context=httpx.create_ssl_context(trust_env=False),
        max_connections=1,
        network_backend=GuardedBackend(),
    )
    return httpx.Client(
        transport=transport,
        timeout=httpx.Timeout(timeout, connect=min(timeout, 5.0)),
        follow_redirects=False,
        trust_env=False,
        headers={"User-Agent": "mrtrweb-webhooks/1"},
    )
