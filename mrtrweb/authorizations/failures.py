"""A connection whose sign-in could not be set up, remembered for a few minutes.

Discovery fetches what a server names; when that fails (refused by the address rules, not
found, unusable), the failure is kept on the connection (``oauth_failed_at``,
``oauth_failure``: the details, for operators) and the next page view within
:data:`FAILURE_KEPT` is answered from it without fetching again. An operator's "Discover
now", a successful discovery, or a change of the connection's URL or allowed addresses
(servers.forms) ends it.
"""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from mrtrweb.servers.models import Connection

__all__ = ["FAILURE_KEPT", "forget", "recent", "remember"]

FAILURE_KEPT = timedelta(minutes=5)
MAX_DETAIL = 2000


def recent(connection: Connection) -> str | None:
    """The details of a failure less than :data:`FAILURE_KEPT` old, else None."""
    failed_at = connection.oauth_failed_at
    if failed_at is None or failed_at <= timezone.now() - FAILURE_KEPT:
        return None
    return connection.oauth_failure or "The sign-in could not be set up."


def remember(connection: Connection, detail: str) -> None:
    now = timezone.now()
    detail = detail[:MAX_DETAIL]
    Connection.objects.filter(pk=connection.pk).update(oauth_failed_at=now, oauth_failure=detail)
    connection.oauth_failed_at, connection.oauth_failure = now, detail


def forget(connection: Connection) -> None:
    # Read from the database, not the instance: another process may have remembered one.
    Connection.objects.filter(pk=connection.pk, oauth_failed_at__isnull=False).update(
        oauth_failed_at=None
    )
    connection.oauth_failed_at = None
