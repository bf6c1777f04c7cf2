"""Fixtures for the demo MCP server, started for real as ``python -m mrtrweb.demo.server --port P``.

Imported by tests/demo/conftest.py and tests/commands/conftest.py. Listed in
``tests/conftest.py``'s ``pytest_plugins`` instead, the session server would be shared.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.peers.fixtures import Peer, running_peer

DEMO_MODULE = "mrtrweb.demo.server"


@pytest.fixture(scope="session")
def demo_server() -> Iterator[Peer]:
    with running_peer(DEMO_MODULE) as peer:
        yield peer
