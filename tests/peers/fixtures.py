"""pytest plugin: the peer MCP servers, started as real subprocesses on 127.0.0.1.

Listed in ``tests/conftest.py`` as ``tests.peers.fixtures``. Fixtures:

- ``fastmcp_process_peer`` (session): ``tests.peers.fastmcp_server`` (SSE-capable, page size
  3) in a process of its own, for the tests that need one: an app or a command served by
  another process reaches it, raw httpx reaches it, its streams arrive as they are sent. The
  default ``fastmcp_peer`` is the same server in the test process (``tests.peers.inprocess``).
- ``short_ttl_process_peer`` (session): the same process with ``--state-ttl 2`` (state expires
  in 2 s); ``short_ttl_peer`` is its in-process twin.
- ``sdk_peer`` (session): ``tests.peers.sdk_server --json-response`` (never SSE).
- ``sdk_peer_sse`` (session): ``tests.peers.sdk_server`` (SSE once a notification is sent).
- ``limits_peer`` (session): ``tests.peers.limits_server`` (deep JSON, endless streams, ...).
- ``fault_peer`` (session): factory, ``fault_peer("drop")`` -> a running ``tests.peers.faults``
  server in that mode (extra CLI args allowed); one process per distinct (mode, args).
- ``peer_factory`` (function): ``peer_factory("fastmcp_server", "--state-key", "k")`` for a
  private server that is stopped after the test (restarts, custom flags).
- ``hostile_peer`` (session): ``tests.peers.hostile``, every attack of the hostile corpus on
  an endpoint of its own (``{base_url}/a/<attack>/mcp``).
- ``oauth_peer`` (session): ``tests.peers.oauth_server``, a fastmcp server behind its own
  OAuth 2.1 authorization server (access tokens live an hour; controls in
  ``tests.peers.oauth_control``). Short lifetimes: ``peer_factory("oauth_server",
  "--access-ttl", "2")``.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

HOST = "127.0.0.1"
REPO_ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT = 20.0


@dataclass
class Peer:
    """A running peer server: ``url`` is its MCP endpoint, ``process`` the child process."""

    url: str
    process: subprocess.Popen[bytes]
    port: int = 0
    module: str = ""
    args: tuple[str, ...] = ()
    log_path: Path | None = field(default=None, repr=False)

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def recorded(self, since: int = 0) -> list[dict[str, Any]]:
        """Requests this peer received on /mcp (not available on raw fault modes).

        Each entry: ``seq``, ``method``, ``path``, ``query``, ``headers`` (``[name, value]``
        pairs, lowercase names, wire order), ``body`` (text) and ``json`` (parsed or None).
        """
        response = httpx.get(f"{self.base_url}/_peer/requests", timeout=5.0)
        response.raise_for_status()
        return [entry for entry in response.json() if entry["seq"] > since]

    def mark(self) -> int:
        """The newest recorded sequence number; pass it to ``recorded(since=...)``."""
        entries = self.recorded()
        return entries[-1]["seq"] if entries else 0

    def clear_recorded(self) -> None:
        httpx.delete(f"{self.base_url}/_peer/requests", timeout=5.0).raise_for_status()

    def output(self) -> str:
        """What the child wrote to stdout/stderr so far."""
        if self.log_path is None or not self.log_path.exists():
            return ""
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)
        if self.log_path is not None:
            with contextlib.suppress(OSError):
                self.log_path.unlink()


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection((HOST, port), timeout=0.2):
            return True
    except OSError:
        return False


def _launch(module: str, args: tuple[str, ...], timeout: float) -> Peer:
    port = free_port()
    qualified = module if "." in module else f"tests.peers.{module}"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    fd, log_name = tempfile.mkstemp(prefix=f"peer-{module}-", suffix=".log")
    command = [sys.executable, "-m", qualified, "--port", str(port), *args]
    with os.fdopen(fd, "wb") as log:
        # A file, not a pipe: a chatty child can never block on a full pipe buffer.
        process = subprocess.Popen(
            command, cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT
        )
    peer = Peer(
        url=f"http://{HOST}:{port}/mcp",
        process=process,
        port=port,
        module=qualified,
        args=args,
        log_path=Path(log_name),
    )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            output = peer.output()
            peer.stop()
            raise PeerStartError(command, f"exited with {process.returncode}", output)
        if _accepts(port):
            return peer
        time.sleep(0.05)
    output = peer.output()
    peer.stop()
    raise PeerStartError(command, f"did not accept connections within {timeout:.0f}s", output)


class PeerStartError(RuntimeError):
    def __init__(self, command: list[str], why: str, output: str) -> None:
        self.output = output
        super().__init__(f"peer {' '.join(command)} {why}; its output:\n{output}")


def start_peer(module: str, *args: str, timeout: float = START_TIMEOUT) -> Peer:
    """Launch ``python -m tests.peers.<module> --port <free port> *args`` and wait for it."""
    for attempt in range(3):
        try:
            return _launch(module, args, timeout)
        except PeerStartError as exc:
            # The free port can be taken between probing and binding; try another one.
            if "address already in use" not in exc.output.lower() or attempt == 2:
                raise
    raise AssertionError("unreachable")


@contextlib.contextmanager
def running_peer(module: str, *args: str) -> Iterator[Peer]:
    peer = start_peer(module, *args)
    try:
        yield peer
    finally:
        peer.stop()


@pytest.fixture(scope="session")
def fastmcp_process_peer() -> Iterator[Peer]:
    with running_peer("fastmcp_server") as peer:
        yield peer


@pytest.fixture(scope="session")
def short_ttl_process_peer() -> Iterator[Peer]:
    with running_peer("fastmcp_server", "--state-ttl", "2") as peer:
        yield peer


@pytest.fixture(scope="session")
def sdk_peer() -> Iterator[Peer]:
    with running_peer("sdk_server", "--json-response") as peer:
        yield peer


@pytest.fixture(scope="session")
def sdk_peer_sse() -> Iterator[Peer]:
    with running_peer("sdk_server") as peer:
        yield peer


@pytest.fixture(scope="session")
def limits_peer() -> Iterator[Peer]:
    """``tests.peers.limits_server``: deep JSON, endless streams, redirects, CR/LF names."""
    with running_peer("limits_server") as peer:
        yield peer


@pytest.fixture(scope="session")
def fault_peer() -> Iterator[Callable[..., Peer]]:
    peers: dict[tuple[str, ...], Peer] = {}

    def get(mode: str, *args: str) -> Peer:
        key = (mode, *args)
        peer = peers.get(key)
        if peer is None or peer.process.poll() is not None:
            peer = peers[key] = start_peer("faults", "--mode", mode, *args)
        return peer

    try:
        yield get
    finally:
        for peer in peers.values():
            peer.stop()


@pytest.fixture
def peer_factory() -> Iterator[Callable[..., Peer]]:
    started: list[Peer] = []

    def start(module: str, *args: str) -> Peer:
        peer = start_peer(module, *args)
        started.append(peer)
        return peer

    try:
        yield start
    finally:
        for peer in started:
            peer.stop()


@pytest.fixture(scope="session")
def hostile_peer() -> Iterator[Peer]:
    """``tests.peers.hostile``: one attack per endpoint, ``f"{peer.base_url}/a/<slug>/mcp"``."""
    with running_peer("hostile") as peer:
        yield peer


@pytest.fixture(scope="session")
def oauth_peer() -> Iterator[Peer]:
    """``tests.peers.oauth_server``: MCP at ``peer.url``, its authorization server at
    ``peer.base_url``; ``OAuthControl.of(peer)`` reads its log and revokes tokens."""
    with running_peer("oauth_server") as peer:
        yield peer
