"""Fixtures of the calls tests: an operator signed in, a connection to the fastmcp peer,
and the pages fetched (checked for a leaked requestState at the end)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client

from mrtrweb.calls.models import Round
from mrtrweb.people.roles import OPERATORS
from mrtrweb.servers.models import Connection
from tests.calls.pages.client import Pages
from tests.support.factories import make_user


@pytest.fixture
def ada() -> Any:
    # Starts calls on tools nobody exposed: an operator sees the whole catalog.
    return make_user("ada", OPERATORS)


@pytest.fixture
def web(ada: Any) -> Client:
    client = Client()
    client.force_login(ada)
    return client


@pytest.fixture
def peer_conn(fastmcp_peer: Any) -> Connection:
    return Connection.objects.create(name="peer", title="Test peer", url=fastmcp_peer.url)


@pytest.fixture
def pages(web: Client) -> Iterator[Pages]:
    pages = Pages(web)
    yield pages
    if Round.objects.exclude(request_state=None).exists():
        pages.assert_no_request_state()
