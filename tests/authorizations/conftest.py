"""People, a connection behind OAuth and the OAuth peer, for the authorizations page tests."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

import pytest
from django.test import Client
from django.utils import timezone

from mrtrweb.people.roles import END_USERS, OPERATORS, ensure_roles
from mrtrweb.servers.models import Connection, ToolExposure
from tests.authorizations.oauth_peer import OAuthPeer, oauth_peer
from tests.support.factories import make_connection, make_user

TOOL = {
    "name": "echo",
    "description": "Says it back",
    "inputSchema": {
        "type": "object",
        "properties": {"text": {"type": "string"}, "times": {"type": "integer"}},
        "required": ["text"],
    },
}


@pytest.fixture
def peer(client: Client) -> Iterator[OAuthPeer]:
    """The OAuth peer; client ID metadata documents it fetches from this app (``client``)."""

    def fetch(url: str) -> dict[str, Any] | None:
        response = Client().get(urlsplit(url).path)
        return response.json() if response.status_code == 200 else None

    with oauth_peer(fetch_document=fetch) as running:
        yield running


def listed(connection: Connection) -> Connection:
    """The connection with a fresh catalog holding the ``echo`` tool, exposed to end users."""
    connection.catalog = {"server": {}, "tools": [TOOL]}
    connection.catalog_fetched_at = timezone.now()
    connection.catalog_expires_at = timezone.now() + timedelta(hours=1)
    connection.save()
    ToolExposure.objects.create(connection=connection, tool_name="echo", exposed=True)
    return connection


@pytest.fixture
def connection(db: Any, peer: OAuthPeer) -> Connection:
    return listed(make_connection(peer=None, name="files", url=peer.mcp_url))


@pytest.fixture
def ada(db: Any) -> Any:
    ensure_roles()
    return make_user("ada", END_USERS)


@pytest.fixture
def bob(db: Any) -> Any:
    ensure_roles()
    return make_user("bob", END_USERS)


@pytest.fixture
def olga(db: Any) -> Any:
    ensure_roles()
    return make_user("olga", OPERATORS)


def signed_in(user: Any) -> Client:
    browser = Client()
    browser.force_login(user)
    return browser


def local(url: str) -> str:
    """An absolute URL of this app as the test client requests it (path and query)."""
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")
