"""pytest plugin: the handshake-era peer (``mcp1_server.py``, mcp 1.x FastMCP) as a subprocess.

It runs on ``var/mcp1/bin/python`` (``make mcp1`` builds that venv; without it these fixtures
fail, never skip). Fixtures: ``mcp1_peer`` (session, stateful), ``mcp1_stateless_peer``
(session, ``stateless_http=True``), ``mcp1_factory`` (function: ``mcp1_factory(*args,
port=None)``, stopped after the test; pass the port of a stopped peer to restart it there).
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from .fixtures import HOST, REPO_ROOT, PeerStartError, _accepts, free_port

MCP1_PYTHON = REPO_ROOT / "var" / "mcp1" / "bin" / "python"
SERVER = REPO_ROOT / "tests" / "peers" / "mcp1_server.py"


@dataclass
class Mcp1Peer:
    port: int
    process: subprocess.Popen[bytes]
    args: tuple[str, ...]
    log_path: Path

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/mcp"

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def sessions(self) -> dict[str, Any]:
        """``{"opened", "closed", "active", "open_ids"}`` since the peer started."""
        response = httpx.get(f"{self.base_url}/_test/sessions", timeout=5.0)
        response.raise_for_status()
        return response.json()

    def requests(self) -> list[dict[str, Any]]:
        response = httpx.get(f"{self.base_url}/_test/requests", timeout=5.0)
        response.raise_for_status()
        return response.json()

    def answers(self) -> list[dict[str, Any]]:
        """Every JSON-RPC response the client POSTed (answers to questions), oldest first:
        ``{"id", "session", "action", "error"}``."""
        response = httpx.get(f"{self.base_url}/_test/answers", timeout=5.0)
        response.raise_for_status()
        return response.json()

    def output(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)


def launch(
    command: list[str], env: dict[str, str], args: tuple[str, ...], port: int, timeout: float
) -> Mcp1Peer:
    """Start one handshake-era peer process (the SDK 1.x or the TypeScript SDK) and wait until
    it accepts connections; its output goes to a log file the failure message quotes."""
    fd, log_name = tempfile.mkstemp(prefix="peer-handshake-", suffix=".log")
    with os.fdopen(fd, "wb") as log:
        process = subprocess.Popen(
            command, cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT
        )
    peer = Mcp1Peer(port, process, args, Path(log_name))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise PeerStartError(command, f"exited with {process.returncode}", peer.output())
        if _accepts(port):
            return peer
        time.sleep(0.05)
    peer.stop()
    raise PeerStartError(command, "did not accept connections", peer.output())


def start_mcp1_peer(*args: str, port: int | None = None, timeout: float = 20.0) -> Mcp1Peer:
    if not MCP1_PYTHON.exists():
        pytest.fail("var/mcp1 is missing: run `make mcp1` (make test does)", pytrace=False)
    port = port or free_port()
    command = [str(MCP1_PYTHON), str(SERVER), "--port", str(port), *args]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("PYTHONPATH", None)
    return launch(command, env, args, port, timeout)


@pytest.fixture(scope="session")
def mcp1_peer() -> Iterator[Mcp1Peer]:
    peer = start_mcp1_peer()
    yield peer
    peer.stop()


@pytest.fixture(scope="session")
def mcp1_stateless_peer() -> Iterator[Mcp1Peer]:
    peer = start_mcp1_peer("--stateless")
    yield peer
    peer.stop()


@pytest.fixture
def mcp1_factory() -> Iterator[Callable[..., Mcp1Peer]]:
    started: list[Mcp1Peer] = []

    def start(*args: str, port: int | None = None) -> Mcp1Peer:
        peer = start_mcp1_peer(*args, port=port)
        started.append(peer)
        return peer

    yield start
    for peer in started:
        peer.stop()
