"""Network backends that only connect to addresses the rules allow (:mod:`.transports` puts
them under httpx).

A backend resolves the host itself, checks every address it resolves to, and connects to a
vetted one, so the address checked is the address used (no window for DNS rebinding). A host
and port the caller trusts (``trusts``: an MCP connection's own origin, names an operator
allowed) is connected to as given.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import Any

import httpcore
import httpx

from .addresses import IPAddress, Rules, refusal, resolve

Trusts = Callable[[str, int], bool]


class Refused(httpcore.ConnectError):
    """Raised instead of connecting; httpx re-raises it as ``httpx.ConnectError`` from this."""


class RefusedURL(httpx.ConnectError):
    """A URL refused before anything was sent (its host is an address the rules refuse)."""


def _trusted(trusts: Trusts | None, host: str, port: int) -> bool:
    return trusts is not None and trusts(host, port)


def _vetted(addresses: list[IPAddress], host: str, rules: Rules, label: str) -> None:
    if not addresses:
        raise httpcore.ConnectError(f"{host} resolves to no address")
    for address in addresses:
        reason = refusal(address, rules)
        if reason is not None:
            raise Refused(f"{label}: {reason}")


class GuardedBackend(httpcore.NetworkBackend):
    """The synchronous backend (webhooks are sent from task threads)."""

    def __init__(
        self, rules: Rules, *, trusts: Trusts | None = None, label: str = "destination refused"
    ) -> None:
        self._inner = httpcore.SyncBackend()
        self._rules = rules
        self._trusts = trusts
        self._label = label

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        options: dict[str, Any] = {"timeout": timeout, "local_address": local_address}
        if _trusted(self._trusts, host, port):
            return self._inner.connect_tcp(host, port, socket_options=socket_options, **options)
        try:
            addresses = resolve(host, port)
        except (OSError, UnicodeError) as exc:  # UnicodeError: a name IDNA cannot encode
            raise httpcore.ConnectError(f"cannot resolve {host}: {exc}") from exc
        _vetted(addresses, host, self._rules, self._label)
        last: Exception | None = None
        for address in addresses:
            try:
                return self._inner.connect_tcp(
                    str(address), port, socket_options=socket_options, **options
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
        raise Refused(f"{self._label}: never a unix socket")

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class AsyncGuardedBackend(httpcore.AsyncNetworkBackend):
    """The asynchronous backend (OAuth's requests run on the shared event loop); the name is
    resolved in a worker thread, so the loop never waits on DNS."""

    def __init__(
        self, rules: Rules, *, trusts: Trusts | None = None, label: str = "destination refused"
    ) -> None:
        self._inner = httpcore.AnyIOBackend()
        self._rules = rules
        self._trusts = trusts
        self._label = label

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's signature)
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        options: dict[str, Any] = {"timeout": timeout, "local_address": local_address}
        if _trusted(self._trusts, host, port):
            return await self._inner.connect_tcp(
                host, port, socket_options=socket_options, **options
            )
        try:
            addresses = await asyncio.to_thread(resolve, host, port)
        except (OSError, UnicodeError) as exc:
            raise httpcore.ConnectError(f"cannot resolve {host}: {exc}") from exc
        _vetted(addresses, host, self._rules, self._label)
        last: Exception | None = None
        for address in addresses:
            try:
                return await self._inner.connect_tcp(
                    str(address), port, socket_options=socket_options, **options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last = exc
        assert last is not None
        raise last

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's signature)
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise Refused(f"{self._label}: never a unix socket")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


def was_refused(exc: BaseException) -> bool:
    """Whether an httpx error came from the address rules rather than the network."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, (Refused, RefusedURL)):
            return True
        seen = seen.__cause__ or seen.__context__
    return False
