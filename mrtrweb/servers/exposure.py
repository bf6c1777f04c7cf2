"""Which tools a person may start: operators expose tools to end users, one tool at a time.

Operators and admins may start every tool a connection offers; everyone else only the tools
an operator marked "end users may start it" (:class:`~mrtrweb.servers.models.ToolExposure`).
Prompts and resources are not exposable: only people who see the whole catalog use them.
A disabled connection starts nothing, for anyone. The start pages offer end users only
connections whose last test passed (:func:`offered_connections`): one never tested, or whose
server failed its last test, would only greet them with a connection error.
"""

from __future__ import annotations

import mcp_types
from django.contrib.auth.models import User
from django.db.models import Exists, OuterRef, QuerySet

from mrtrweb.people.roles import is_admin, is_operator

from .models import Connection, ToolExposure

__all__ = [
    "may_start",
    "offered_connection",
    "offered_connections",
    "sees_whole_catalog",
    "startable_connections",
    "startable_tools",
]


def sees_whole_catalog(user: User) -> bool:
    """Operators and admins: every tool, prompt and resource, exposed or not."""
    return is_operator(user) or is_admin(user)


def _is_person(user: User) -> bool:
    return bool(getattr(user, "is_authenticated", False) and getattr(user, "is_active", False))


def exposed_names(connection: Connection) -> set[str]:
    return set(
        ToolExposure.objects.filter(connection=connection, exposed=True).values_list(
            "tool_name", flat=True
        )
    )


def startable_tools(user: User, connection: Connection) -> list[mcp_types.Tool]:
    """The tools of ``connection``'s cached catalog that ``user`` may start, in catalog order."""
    if not _is_person(user) or not connection.enabled:
        return []
    tools = connection.tools()
    if sees_whole_catalog(user):
        return tools
    allowed = exposed_names(connection)
    return [tool for tool in tools if tool.name in allowed]


def may_start(user: User, connection: Connection, tool_name: str) -> bool:
    """May ``user`` start ``tool_name`` on ``connection``? (Whether the server still offers the
    tool is the caller's to check against the catalog.)"""
    if not _is_person(user) or not connection.enabled:
        return False
    if sees_whole_catalog(user):
        return True
    return ToolExposure.objects.filter(
        connection_id=connection.pk, tool_name=tool_name, exposed=True
    ).exists()


def startable_connections(user: User) -> QuerySet[Connection]:
    """Enabled connections on which ``user`` may start something (for the pick list)."""
    if not _is_person(user):
        return Connection.objects.none()
    if sees_whole_catalog(user):
        return _enabled()
    return _startable_by_end_users()


def offered_connections(user: User) -> QuerySet[Connection]:
    """The connections the start pages offer ``user``: :func:`startable_connections`, and for
    end users only those whose last test passed (an operator tests a new or failing one
    first). Operators and admins see them all, with ``Connection.not_offered_reason``."""
    if _is_person(user) and not sees_whole_catalog(user):
        return _offered_to_end_users()
    return startable_connections(user)


def offered_connection(user: User, name: str) -> Connection | None:
    """The connection called ``name``, if :func:`offered_connections` offers it to ``user``
    (every start page and start asks)."""
    if not _is_person(user):
        return None
    offered = _enabled() if sees_whole_catalog(user) else _offered_to_end_users()
    return offered.filter(name=name).first()


def _enabled() -> QuerySet[Connection]:
    return Connection.objects.filter(enabled=True)


def _startable_by_end_users() -> QuerySet[Connection]:
    exposed = ToolExposure.objects.filter(connection=OuterRef("pk"), exposed=True)
    return _enabled().filter(Exists(exposed))


def _offered_to_end_users() -> QuerySet[Connection]:
    return _startable_by_end_users().filter(tested_at__isnull=False, test_failure="")
