"""pytest plugin: the TypeScript SDK 1.x handshake-era peer (``ts_server.cjs``) on Node 22.

The SDK is installed by ``make node-sdk`` into ``var/node-sdk`` and run on the Node 22 of
``var/node`` (``make test`` installs both; without them these fixtures fail, never skip).
Fixtures: ``ts_peer`` (session, stateful), ``ts_stateless_peer`` (session). The peers are
:class:`tests.peers.mcp1.Mcp1Peer` objects (``url``, ``sessions()``, ``stop()``);
``requests()`` is not served.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from .fixtures import REPO_ROOT, free_port
from .mcp1 import Mcp1Peer, launch

NODE = REPO_ROOT / "var" / "node" / "node_modules" / "node" / "bin" / "node"
SDK_MODULES = REPO_ROOT / "var" / "node-sdk" / "node_modules"
SERVER = REPO_ROOT / "tests" / "peers" / "ts_server.cjs"


def start_ts_peer(*args: str, port: int | None = None, timeout: float = 20.0) -> Mcp1Peer:
    missing = [str(p) for p in (NODE, SDK_MODULES) if not p.exists()]
    if missing:
        pytest.fail(f"missing {missing}: run `make node-sdk` (make test does)", pytrace=False)
    port = port or free_port()
    command = [str(NODE), str(SERVER), "--port", str(port), *args]
    env = {**os.environ, "NODE_PATH": str(SDK_MODULES)}
    return launch(command, env, args, port, timeout)


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
