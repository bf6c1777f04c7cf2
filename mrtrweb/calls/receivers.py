"""What the calls app does when other apps announce something (connected in ``CallsConfig``).

An account connected (``authorizations.signals.connected``, sent after its tokens are
committed): the calls that waited for it are sent.
"""

from __future__ import annotations

import logging
from typing import Any

from django.contrib.auth.models import User

from mrtrweb.servers.models import Connection

from . import engine

__all__ = ["account_connected"]

logger = logging.getLogger(__name__)


def account_connected(
    sender: Any, *, connection: Connection, user: User | None = None, **kwargs: Any
) -> None:
    """Send what waited for this account: the person's calls, or every call on the
    connection for its own account."""
    resumed = engine.resume_authorized(connection, user)
    if resumed:
        logger.info(
            "connection %s: an account was connected, %d waiting call(s) queued",
            connection.name,
            resumed,
        )
