"""pytest plugin: the fastmcp peer served inside the test process, without a socket.

Engine and view tests only need a real MCP server's answers, not a real process: starting
``tests.peers.fastmcp_server`` in this process and reaching it through httpx's
``ASGITransport`` saves the subprocess, the sockets and the second interpreter's CPU.
mrtrweb's MCP client finds the app through the test hook ``mrtrweb.mcp.io_loop.serve_in_process``
(the connection URL's ``http://127.0.0.1:<port>`` is mounted on a transport that calls the app).

The app runs on an event loop of its own, in a thread, as a server would: fastmcp's session
manager lives on the loop its lifespan started on, while the client's requests come from
whichever loop ``async_to_sync`` gives them. ``ASGITransport`` hands back a response only once
the app has finished it, so an SSE stream arrives whole: tests of streaming, timeouts or
deadlines over real sockets keep the subprocess peers (``tests.peers.fixtures``).

These are the suite's default peers (same tools and recorder as the subprocess peers):

- ``fastmcp_peer`` (session): ``fastmcp_server`` (page size 3, state TTL 600 s);
- ``short_ttl_peer`` (session): the same with a state TTL of 2 s;
- ``in_process_factory`` (function scope): ``in_process_factory("fastmcp_server", "--state-key",
  "k")``, a private peer stopped after the test.

Only this process's MCP client reaches them. A test asks for ``fastmcp_process_peer`` /
``short_ttl_process_peer`` (``tests.peers.fixtures``) by name when another process must reach
the peer (an app served by uvicorn, a browser's app, a command in a child process), when it
speaks raw HTTP to the peer, or when what it proves is how a stream arrives over a socket.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from mrtrweb.mcp import io_loop
from tests.peers._common import MCP_PATH, PeerHarness

HOST = "127.0.0.1"
START_TIMEOUT = 20.0


class _AppThread:
    """An ASGI app with its lifespan running on an event loop in a thread of its own."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self.loop.run_forever, name="in-process-peer", daemon=True
        )
        self._thread.start()
        self._stop: asyncio.Event | None = None
        self._started = threading.Event()
        self._lifespan = asyncio.run_coroutine_threadsafe(self._run(), self.loop)
        if not self._started.wait(START_TIMEOUT):
            raise RuntimeError(f"the in-process peer did not start: {self._lifespan!r}")

    async def _run(self) -> None:
        self._stop = asyncio.Event()
        async with self.app.router.lifespan_context(self.app):
            self._started.set()
            await self._stop.wait()

    def close(self) -> None:
        if self._stop is not None:
            self.loop.call_soon_threadsafe(self._stop.set)
        with contextlib.suppress(Exception):
            self._lifespan.result(timeout=10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
        self.loop.close()


class _Bridge(httpx.AsyncBaseTransport):
    """Hands each request to the app on the app's own loop and the response back to the
    caller's loop."""

    def __init__(self, harness: PeerHarness, loop: asyncio.AbstractEventLoop) -> None:
        self._asgi = httpx.ASGITransport(app=harness, client=(HOST, 50000))
        self._loop = loop

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        await request.aread()
        future = asyncio.run_coroutine_threadsafe(
            self._asgi.handle_async_request(request), self._loop
        )
        return await asyncio.wrap_future(future)


class InProcessPeer:
    """A peer answering in this process; the same interface as ``tests.peers.fixtures.Peer``
    (``url``, ``base_url``, ``port``, ``recorded``, ``mark``, ``clear_recorded``)."""

    def __init__(self, module: str, *args: str) -> None:
        # A port held (bound, never listening) for the peer's life, so no real server is
        # given the address the hook answers for.
        self._reserved = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._reserved.bind((HOST, 0))
        self.port = int(self._reserved.getsockname()[1])
        self.module = module
        self.args = args
        self.url = f"{self.base_url}{MCP_PATH}"
        self.harness = PeerHarness(_build(module, self.base_url, args))
        self._app = _AppThread(self.harness.app)
        io_loop.serve_in_process(self.base_url, _Bridge(self.harness, self._app.loop))

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def recorded(self, since: int = 0) -> list[dict[str, Any]]:
        return [dict(entry) for entry in list(self.harness.records) if entry["seq"] > since]

    def mark(self) -> int:
        entries = self.recorded()
        return entries[-1]["seq"] if entries else 0

    def clear_recorded(self) -> None:
        self.harness.records.clear()

    def output(self) -> str:
        return ""

    def stop(self) -> None:
        if self._reserved.fileno() == -1:
            return
        io_loop.serve_in_process(self.base_url, None)
        self._app.close()
        self._reserved.close()


def _build(module: str, base_url: str, args: tuple[str, ...]) -> Any:
    if module != "fastmcp_server":
        raise ValueError(f"no in-process build for {module}")
    from tests.peers import fastmcp_server

    options = dict(zip(args[::2], args[1::2], strict=True))
    # URL-mode rounds point at this peer's /authorize (the subprocess sets it in main()).
    fastmcp_server.BASE_URL["value"] = base_url
    server = fastmcp_server.build_server(
        page_size=int(options.get("--page-size", 3)),
        state_ttl=float(options.get("--state-ttl", 600.0)),
        state_key=options.get("--state-key"),
    )
    if options.get("--extra-tools") == "renewal":
        from tests.peers._renewal_tools import register_fastmcp

        register_fastmcp(server)
    return server.http_app(path=MCP_PATH)


@contextlib.contextmanager
def in_process_peer(module: str, *args: str) -> Iterator[InProcessPeer]:
    peer = InProcessPeer(module, *args)
    try:
        yield peer
    finally:
        peer.stop()


@pytest.fixture(scope="session")
def fastmcp_peer() -> Iterator[InProcessPeer]:
    with in_process_peer("fastmcp_server") as peer:
        yield peer


@pytest.fixture(scope="session")
def short_ttl_peer() -> Iterator[InProcessPeer]:
    with in_process_peer("fastmcp_server", "--state-ttl", "2") as peer:
        yield peer


@pytest.fixture
def in_process_factory() -> Iterator[Any]:
    """``in_process_factory("fastmcp_server", "--state-key", "k")``: a private in-process peer,
    stopped after the test (a stopped peer's address refuses connections, as a dead server's
    does)."""
    started: list[InProcessPeer] = []

    def start(module: str, *args: str) -> InProcessPeer:
        peer = InProcessPeer(module, *args)
        started.append(peer)
        return peer

    try:
        yield start
    finally:
        for peer in started:
            peer.stop()
