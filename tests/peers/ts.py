"""pytest plugin: the TypeScript SDK 1.x handshake-era peer (``ts_server.cjs``) on Node 22.

The SDK is installed by ``make node-sdk`` into ``var/node-sdk`` and run on the Node 22 of
``var/node`` (``make test`` installs both; without them these fixtures fail, never skip).
Fixtures: ``ts_peer`` (session, stateful), ``ts_stateless_peer`` (session), ``ts_factory``
(function: ``ts_factory(*args)``, e.g. ``"--question-timeout", "1000"``). The peers are
:class:`tests.peers.mcp1.Mcp1Peer` objects (``url``, ``sessions()``, ``stop()``);
``requests()`` is not served.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

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


@pytest.fixture
def ts_factory() -> Iterator[Callable[..., Mcp1Peer]]:
    """``ts_factory(*args)``: a private TypeScript peer, stopped after the test."""
    started: list[Mcp1Peer] = []

    def start(*args: str, port: int | None = None) -> Mcp1Peer:
        peer = start_ts_peer(*args, port=port)
        started.append(peer)
        return peer

    yield start
    for peer in started:
        peer.stop()


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
