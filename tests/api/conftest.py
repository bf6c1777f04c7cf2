from __future__ import annotations

from typing import Any

import pytest

from tests.api.support import Api, api_for, connection, expose, operator, person


@pytest.fixture
def peer_conn(fastmcp_peer: Any) -> Any:
    """The fastmcp peer as the connection "peer"; end users may start approve_deploy, echo
    and url_login on it."""
    return expose(connection(fastmcp_peer, "peer"), "approve_deploy", "echo", "url_login")


@pytest.fixture
def ann(db: Any) -> Any:
    return person("ann")


@pytest.fixture
def ann_api(ann: Any) -> Api:
    return api_for(ann)


@pytest.fixture
def bob_api(db: Any) -> Api:
    return api_for(person("bob"))


@pytest.fixture
def op_api(db: Any) -> Api:
    return api_for(operator("otto"))
