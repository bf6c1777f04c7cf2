"""The fastmcp peer runs in this process for these tests (tests/peers/inprocess.py)."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture
def fastmcp_peer(fastmcp_in_process: Any) -> Any:
    return fastmcp_in_process


@pytest.fixture
def short_ttl_peer(short_ttl_in_process: Any) -> Any:
    return short_ttl_in_process
