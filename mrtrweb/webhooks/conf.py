"""Webhook settings: a Django setting wins, then the environment variable of the same name,
then the default. Read on every use, so tests can change them with pytest-django's
``settings`` fixture.

| Name | Default | Meaning |
| --- | --- | --- |
| ``MRTRWEB_WEBHOOK_ALLOW_PRIVATE`` | ``DEBUG`` | also send to loopback and private addresses |
| ``MRTRWEB_WEBHOOK_ALLOWED_NETWORKS`` | (none) | CIDRs always allowed, e.g. ``10.2.0.0/16`` |
| ``MRTRWEB_WEBHOOK_MAX_ATTEMPTS`` | ``6`` | attempts per delivery, the first included |
| ``MRTRWEB_WEBHOOK_BACKOFF`` | ``60`` | seconds before the first retry; doubled each time |
| ``MRTRWEB_WEBHOOK_BACKOFF_MAX`` | ``900`` | the longest wait between two attempts |
| ``MRTRWEB_WEBHOOK_TIMEOUT`` | ``10`` | seconds to wait for the receiver's response |
"""

from __future__ import annotations

import os
from typing import Any

from django.conf import settings

from mrtrweb import env

DEFAULTS: dict[str, Any] = {
    "MRTRWEB_WEBHOOK_MAX_ATTEMPTS": 6,
    "MRTRWEB_WEBHOOK_BACKOFF": 60.0,
    "MRTRWEB_WEBHOOK_BACKOFF_MAX": 900.0,
    "MRTRWEB_WEBHOOK_TIMEOUT": 10.0,
    "MRTRWEB_WEBHOOK_ALLOWED_NETWORKS": (),
}


def _raw(name: str) -> Any:
    if hasattr(settings, name):
        return getattr(settings, name)
    return os.environ.get(name)


def _number(name: str) -> float:
    value = _raw(name)
    if value is None or (isinstance(value, str) and not value.strip()):
        return float(DEFAULTS[name])
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise env.EnvError(f"{name}={value!r} is not a number") from None
    if number < 0:
        raise env.EnvError(f"{name}={value!r} must not be negative")
    return number


def max_attempts() -> int:
    return max(1, int(_number("MRTRWEB_WEBHOOK_MAX_ATTEMPTS")))


def backoff() -> float:
    return _number("MRTRWEB_WEBHOOK_BACKOFF")


def backoff_max() -> float:
    return _number("MRTRWEB_WEBHOOK_BACKOFF_MAX")


def timeout() -> float:
    return _number("MRTRWEB_WEBHOOK_TIMEOUT") or float(DEFAULTS["MRTRWEB_WEBHOOK_TIMEOUT"])


def allow_private() -> bool:
    value = _raw("MRTRWEB_WEBHOOK_ALLOW_PRIVATE")
    if value is None:
        # A developer's receiver on 127.0.0.1 just works; a deployment must opt in.
        return bool(settings.DEBUG)
    if isinstance(value, str):
        return env.env_bool(
            {"MRTRWEB_WEBHOOK_ALLOW_PRIVATE": value}, "MRTRWEB_WEBHOOK_ALLOW_PRIVATE"
        )
    return bool(value)


def allowed_networks() -> list[str]:
    value = _raw("MRTRWEB_WEBHOOK_ALLOWED_NETWORKS")
    if value is None:
        return list(DEFAULTS["MRTRWEB_WEBHOOK_ALLOWED_NETWORKS"])
    if isinstance(value, str):
        return env.env_list(
            {"MRTRWEB_WEBHOOK_ALLOWED_NETWORKS": value}, "MRTRWEB_WEBHOOK_ALLOWED_NETWORKS"
        )
    return [str(item) for item in value]
