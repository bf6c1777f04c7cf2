"""Server notifications that arrive on an answer's stream, handed to the caller's callback.

Both eras' clients read them the same way: a notification holding something unfit, or one
the models cannot read, is logged and skipped; it never breaks the answer it came with.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import mcp_types
from pydantic import ValidationError

from .unfit import unfit

__all__ = ["NotificationCallback", "notification_handler"]

logger = logging.getLogger("mrtrweb.mcp.client")

NotificationCallback = Callable[[mcp_types.ServerNotification], Awaitable[None] | None]


def notification_handler(
    callback: NotificationCallback | None,
) -> Callable[[dict[str, Any]], Awaitable[None]] | None:
    """What the transport calls with each raw notification, or None when nobody listens."""
    if callback is None:
        return None

    async def handle(message: dict[str, Any]) -> None:
        why = unfit(message)
        if why is not None:
            logger.warning("ignoring a notification %r holding %s", message.get("method"), why)
            return
        try:
            notification = mcp_types.server_notification_adapter.validate_python(message)
        except ValidationError:
            logger.warning("ignoring an unparseable notification %r", message.get("method"))
            return
        outcome = callback(notification)
        if outcome is not None:
            await outcome

    return handle
