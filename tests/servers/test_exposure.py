"""Who may start which tool: ``startable_tools``, ``may_start`` and ``startable_connections``."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import AnonymousUser

from mrtrweb.people.roles import ADMINS, END_USERS, OPERATORS
from mrtrweb.servers.catalog import refresh_catalog
from mrtrweb.servers.exposure import (
    may_start,
    sees_whole_catalog,
    startable_connections,
    startable_tools,
)
from mrtrweb.servers.models import Connection, ToolExposure
from tests.peers.fixtures import Peer
from tests.servers.conftest import person

pytestmark = pytest.mark.django_db


@pytest.fixture
def conn(fastmcp_peer: Peer) -> Connection:
    connection = Connection.objects.create(name="peer", url=fastmcp_peer.url)
    assert refresh_catalog(connection).ok
    ToolExposure.objects.create(connection=connection, tool_name="echo", exposed=True)
    ToolExposure.objects.create(connection=connection, tool_name="add", exposed=False)
    # Routing only, not exposed: still not startable by end users.
    ToolExposure.objects.create(connection=connection, tool_name="purchase", routing="caller")
    return connection


@pytest.fixture
def people() -> dict[str, Any]:
    return {
        "end user": person("eve", END_USERS),
        "no role": person("nora"),
        "operator": person("olga", OPERATORS),
        "admin": person("adam", ADMINS),
        "superuser": person("root", is_superuser=True),
        "staff": person("stan", is_staff=True),
    }


def names(tools: list[Any]) -> list[str]:
    return [tool.name for tool in tools]


def test_operators_and_admins_may_start_every_tool(conn: Connection, people: dict) -> None:
    every = names(conn.tools())
    assert len(every) > 3
    for role in ("operator", "admin", "superuser"):
        user = people[role]
        assert sees_whole_catalog(user)
        assert names(startable_tools(user, conn)) == every
        assert all(may_start(user, conn, name) for name in every)


def test_everyone_else_only_the_exposed_tools(conn: Connection, people: dict) -> None:
    for role in ("end user", "no role", "staff"):
        user = people[role]
        assert not sees_whole_catalog(user)
        assert names(startable_tools(user, conn)) == ["echo"]
        assert may_start(user, conn, "echo")
        assert not may_start(user, conn, "add")
        assert not may_start(user, conn, "purchase")
        assert not may_start(user, conn, "approve_deploy")


def test_exposure_is_per_connection(conn: Connection, people: dict, fastmcp_peer: Peer) -> None:
    other = Connection.objects.create(name="other", url=fastmcp_peer.url, catalog=conn.catalog)
    assert startable_tools(people["end user"], other) == []
    assert not may_start(people["end user"], other, "echo")


def test_nobody_starts_anything_on_a_disabled_connection(conn: Connection, people: dict) -> None:
    Connection.objects.filter(pk=conn.pk).update(enabled=False)
    conn.refresh_from_db()
    for user in people.values():
        assert startable_tools(user, conn) == []
        assert not may_start(user, conn, "echo")


def test_signed_out_and_inactive_people_start_nothing(conn: Connection, people: dict) -> None:
    assert startable_tools(AnonymousUser(), conn) == []
    assert not may_start(AnonymousUser(), conn, "echo")
    for role in ("end user", "operator"):
        user = people[role]
        user.is_active = False
        user.save()
        assert startable_tools(user, conn) == []
        assert not may_start(user, conn, "echo")


def test_startable_connections(conn: Connection, people: dict, fastmcp_peer: Peer) -> None:
    bare = Connection.objects.create(name="bare", url=fastmcp_peer.url)
    off = Connection.objects.create(name="off", url=fastmcp_peer.url, enabled=False)
    ToolExposure.objects.create(connection=off, tool_name="echo", exposed=True)
    assert list(startable_connections(people["end user"])) == [conn]
    assert list(startable_connections(people["operator"])) == [bare, conn]
    assert list(startable_connections(people["admin"])) == [bare, conn]
    assert list(startable_connections(AnonymousUser())) == []
