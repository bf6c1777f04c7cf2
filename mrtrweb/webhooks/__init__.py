"""Webhooks: a program that starts a call hears when a round waits and when the call ends.

``subscribe(call, url, token)`` is the entry point (the JSON API calls it for the
``"webhook"`` of ``POST /api/v1/calls``); ``check_url(url)`` raises the same
:class:`InvalidWebhookURL` as ``subscribe`` would, without touching the database, so a view
can refuse a bad URL before it starts the call. The package imports no models at import time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .destinations import InvalidWebhookURL, check_url

if TYPE_CHECKING:
    from mrtrweb.api.models import ApiToken
    from mrtrweb.calls.models import Call

__all__ = ["InvalidWebhookURL", "check_url", "subscribe"]


def subscribe(call: Call, url: str, token: ApiToken) -> None:
    """Send ``call``'s webhooks to ``url``, signed with ``token``'s secret.

    Raises :class:`InvalidWebhookURL` (a ``ValueError``) when the URL may not be used.
    """
    from .subscriptions import subscribe as _subscribe

    _subscribe(call, url, token)
