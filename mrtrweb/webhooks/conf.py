"""Webhook settings, as the senders use them. Their defaults and what they mean are in
mrtrweb/settings.py (``MRTRWEB_WEBHOOK_*``); read on every use, so tests can change them with
pytest-django's ``settings`` fixture.
"""

from __future__ import annotations

from django.conf import settings


def max_attempts() -> int:
    return max(1, int(settings.MRTRWEB_WEBHOOK_MAX_ATTEMPTS))


def backoff() -> float:
    return float(settings.MRTRWEB_WEBHOOK_BACKOFF)


def backoff_max() -> float:
    return float(settings.MRTRWEB_WEBHOOK_BACKOFF_MAX)


def timeout() -> float:
    return float(settings.MRTRWEB_WEBHOOK_TIMEOUT)


def allow_private() -> bool:
    return bool(settings.MRTRWEB_WEBHOOK_ALLOW_PRIVATE)


def allowed_networks() -> list[str]:
    return [str(item) for item in settings.MRTRWEB_WEBHOOK_ALLOWED_NETWORKS]
