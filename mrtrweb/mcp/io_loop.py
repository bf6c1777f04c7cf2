"""One long-lived event loop per process for MCP requests made from plain threads.

Why: ``async_to_sync`` called from a thread that no event loop is waiting on (a task worker,
a delivery thread) starts a new event loop in a new thread for every call, and the MCP
client then opens a new HTTP connection each time. Together that cost more than the
server's own answer (docs/performance.md). Threads that attach this loop have their
``async_to_sync`` calls run on it instead, and the client can reuse pooled connections.

Threads that already run under an event loop (a request served by an ASGI server, or code
called through ``sync_to_async``) keep theirs: their ``async_to_sync`` calls go back to it,
which is what asgiref does by itself and what their live updates rely on.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import os
import ssl
import threading
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from http.cookiejar import Cookie, CookieJar
from typing import Any, TypeVar

import httpx
from asgiref.sync import SyncToAsync

__all__ = ["attached", "is_current", "new_http", "pooled_http", "serve_in_process", "submit"]

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_pid: int | None = None
# (connect timeout, read timeout) -> a client whose connections every MCP request of this
# process may reuse; only ever used on the shared loop.
_clients: dict[tuple[float, float], httpx.AsyncClient] = {}
# Tests only (serve_in_process): origin -> a transport that answers in this process. Empty in
# production, where every client is made exactly as without it.
_in_process: dict[str, httpx.AsyncBaseTransport] = {}


def _shared_loop() -> asyncio.AbstractEventLoop:
    global _loop, _pid
    with _lock:
        if _loop is None or _pid != os.getpid() or _loop.is_closed():
            # After a fork the parent's loop thread is gone: start afresh.
            _clients.clear()
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="mrtrweb-mcp-io", daemon=True)
            thread.start()
            _loop, _pid = loop, os.getpid()
        return _loop


@contextlib.contextmanager
def attached() -> Iterator[None]:
    """Within this block, ``async_to_sync`` calls of this thread run on the shared loop,
    unless the thread already has a loop of its own to go back to.

    asgiref looks for that loop in ``SyncToAsync.threadlocal`` (where it records the loop of
    the code that called into a ``sync_to_async`` thread), so setting it there is all it
    takes; the calling thread still runs the thread-sensitive work the coroutine hands back
    (database writes from progress callbacks), on its own database connection.
    """
    local = SyncToAsync.threadlocal
    own = getattr(local, "main_event_loop", None)
    # Only a loop still running is one to go back to. asgiref leaves the loop of a finished
    # ``async_to_sync`` recorded in the thread (whose ``sync_to_async`` work it ran), closed:
    # taken for the thread's own, every later call would start a new loop in a new thread and
    # open a new HTTP connection, as if this block were not there.
    if (
        own is not None
        and own.is_running()
        and getattr(local, "main_event_loop_pid", None) == os.getpid()
    ):
        yield
        return
    local.main_event_loop = _shared_loop()
    local.main_event_loop_pid = os.getpid()
    try:
        yield
    finally:
        local.main_event_loop = None
        local.main_event_loop_pid = None


def submit(coroutine: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
    """Run ``coroutine`` as a task on the shared loop (from any thread but the loop's own):
    work that waits for minutes on a server (a handshake-era call whose question a person
    answers) without holding a thread.

    The task starts from a context of its own, not the caller's. A request's context names
    the request's thread as the one for thread-sensitive work (asgiref's
    ``ThreadSensitiveContext``): inherited, a progress report written through
    ``sync_to_async`` would queue for that thread while it waits for this very task to
    settle, for ever (the API's start of a handshake-era call whose server reported progress
    before its first question hung so), and after the request the thread is not its own.
    """
    loop = _shared_loop()
    return contextvars.Context().run(asyncio.run_coroutine_threadsafe, coroutine, loop)


def is_current() -> bool:
    """Whether the running coroutine runs on the shared loop."""
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        return False
    return running is _loop and _pid == os.getpid()


def pooled_http(
    *, connect_timeout: float, read_timeout: float, verify: ssl.SSLContext
) -> httpx.AsyncClient | None:
    """A pooled client for these timeouts when running on the shared loop; otherwise None
    (the caller makes a client of its own, bound to its own loop, and closes it)."""
    if not is_current():
        return None
    key = (connect_timeout, read_timeout)
    client = _clients.get(key)
    if client is None:
        client = _clients[key] = new_http(
            connect_timeout=connect_timeout, read_timeout=read_timeout, verify=verify
        )
    return client


class _NoCookies(CookieJar):
    """A jar that keeps no cookie, so none is ever sent back (httpx's suggested way)."""

    def extract_cookies(self, response: Any, request: Any) -> None:
        return None

    def set_cookie(self, cookie: Cookie) -> None:
        return None


def new_http(
    *,
    connect_timeout: float,
    read_timeout: float,
    verify: ssl.SSLContext,
    keep_cookies: bool = False,
    transport: httpx.AsyncBaseTransport | None = None,
    on_request: Callable[[httpx.Request], Awaitable[None]] | None = None,
) -> httpx.AsyncClient:
    """The HTTP client MCP requests go through, pooled or not: the one place they are made.

    It keeps no cookies unless ``keep_cookies``. httpx keeps what a server sets and sends it
    with every later request to that server, and the pooled client carries every person's
    requests: a cookie set for one person's call (a server's or gateway's sign-in) would come
    back with the next person's. A sessionless request stands alone and needs none. Only a
    handshake-era session's own client keeps them, for that session's life: a load balancer's
    affinity cookie may be what holds the session to the server that has it.

    ``transport`` replaces the network for every origin no test peer answers (OAuth's
    guarded one, for URLs a server chose), and proxies from the environment are then not
    used: they would be the only address it saw. ``on_request`` sees every request before it
    is sent, a test peer's too, and refuses one by raising an ``httpx.RequestError``.
    """
    return httpx.AsyncClient(
        timeout=httpx.Timeout(read_timeout, connect=connect_timeout, pool=connect_timeout),
        follow_redirects=False,
        verify=verify,
        mounts=dict(_in_process) or None,
        cookies=None if keep_cookies else _NoCookies(),
        transport=transport,
        trust_env=transport is None,
        event_hooks={"request": [on_request]} if on_request is not None else None,
    )


def serve_in_process(origin: str, transport: httpx.AsyncBaseTransport | None) -> None:
    """Tests only: answer requests to ``origin`` (``http://127.0.0.1:<port>``) with
    ``transport``, an app in this process (tests/peers/inprocess.py); ``None`` stops it.

    Clients made from now on mount it; pooled clients made before are dropped so that the
    next request makes one that does.
    """
    with _lock:
        if transport is None:
            _in_process.pop(origin, None)
        else:
            _in_process[origin] = transport
        stale = list(_clients.values())
        _clients.clear()
        loop = _loop
    if loop is not None and not loop.is_closed():
        for client in stale:
            asyncio.run_coroutine_threadsafe(client.aclose(), loop)
