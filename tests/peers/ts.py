"""pytest plugin: the TypeScript SDK 1.x handshake-era peer (``ts_server.cjs``) on Node 22.

The SDK is installed by ``make node-sdk`` into ``var/node-sdk`` and run on the Node 22 of
``var/node`` (``make test`` installs both; without them these fixtures fail, never skip).
Fixtures: ``ts_peer`` (session, stateful), ``ts_stateless_peer`` (session). The peers are
:class:`tests.peers.mcp1.Mcp1Peer` objects (``url``, ``sessions()``, ``stop()``);
``requests()`` is not served.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from .fixtures import REPO_ROOT, PeerStartError, _accepts, free_port
from .mcp1 import Mcp1Peer

NODE = REPO_ROOT / "var" / "node" / "node_modules" / "node" / "bin" / "node"
SDK_MODULES = REPO_ROOT / "var" / "node-sdk" / "node_modules"
SERVER = REPO_ROOT / "tests" / "peers" / "ts_server.cjs"


def start_ts_peer(*args: str, port: int | None = None, timeout: float = 20.0) -> Mcp1Peer:
    missing = [str(p) for p in (NODE, SDK_MODULES) if not p.exists()]
    if missing:
        pytest.fail(f"missing {missing}: run `make node-sdk` (make test does)", pytrace=False)
    port = port or free_port()
    fd, log_name = tempfile.mkstemp(prefix="peer-ts-", suffix=".log")
    command = [str(NODE), str(SERVER), "--port", str(port), *args]
    env = {**os.environ, "NODE_PATH": str(SDK_MODULES)}
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


@pytest.fixture(scope="session")
def ts_peer() -> Iterator[Mcp1Peer]:
    peer = start_ts_peer()
    yield peer
    peer.stop()


@pytest.fixture(scope="session")
def ts_stateless_peer() -> Iterator[Mcp1Peer]:
    peer = start_ts_peer("--stateless")
    yield peer
    peer.stop()
