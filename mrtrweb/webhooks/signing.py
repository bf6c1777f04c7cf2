"""Webhook signatures: the Standard Webhooks headers, and mrtrweb's own header for one release.

Every delivery carries the three headers of the Standard Webhooks specification
(standardwebhooks.com), made by the ``standardwebhooks`` library, so a receiver verifies with
that library (or any implementation of the spec) and the token's secret in its ``whsec_`` form:

    webhook-id: <the delivery's id, the same on every retry>
    webhook-timestamp: <unix seconds>
    webhook-signature: v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">

The key is the API token's webhook secret as stored, its UTF-8 bytes; :func:`standard_secret`
presents that same key as ``whsec_`` + base64, so a token issued before the change needs no
new secret and both signatures below verify with it.

Until mrtrweb 0.3.0, deliveries also carry the header of 0.1,
``X-Mrtr-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>." + body>`` (:func:`sign`),
and :func:`verify` keeps accepting it, so existing receivers go on working while they move
to the standard headers. That part uses the standard library only.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import time
from collections.abc import Mapping
from datetime import UTC, datetime

from standardwebhooks import Webhook, WebhookVerificationError

__all__ = [
    "DEFAULT_TOLERANCE",
    "sign",
    "standard_headers",
    "standard_secret",
    "verify",
    "verify_standard",
]

SCHEME = "v1"
DEFAULT_TOLERANCE = 300
SECRET_PREFIX = "whsec_"


def _key(secret: str | bytes) -> bytes:
    return secret.encode() if isinstance(secret, str) else bytes(secret)


def standard_secret(secret: str | bytes) -> str:
    """The token's webhook secret in the Standard Webhooks form: the same key, base64."""
    return SECRET_PREFIX + base64.b64encode(_key(secret)).decode("ascii")


def standard_headers(
    secret: str | bytes, message_id: str, body: bytes, timestamp: int | None = None
) -> dict[str, str]:
    """``webhook-id``, ``webhook-timestamp`` and ``webhook-signature`` for ``body``."""
    t = int(time.time()) if timestamp is None else int(timestamp)
    signature = Webhook(_key(secret)).sign(
        message_id, datetime.fromtimestamp(t, tz=UTC), body.decode("utf-8")
    )
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(t),
        "webhook-signature": signature,
    }


def verify_standard(secret: str | bytes, headers: Mapping[str, str], body: bytes | str) -> bool:
    """Whether the Standard Webhooks headers sign ``body``, as the library checks them (a
    timestamp within 5 minutes; any of several ``v1,`` signatures may match)."""
    try:
        Webhook(_key(secret)).verify(body, dict(headers), json_parse=False)
    except (WebhookVerificationError, ValueError):
        # ValueError: a malformed signature list, bad base64 or a body that is not UTF-8
        # (the library lets those through as they are).
        return False
    return True


# -- X-Mrtr-Signature, sent and accepted until 0.3.0 -----------------------------------------


def _mac(secret: str | bytes, timestamp: int, body: bytes) -> str:
    return hmac.new(_key(secret), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()


def sign(secret: str | bytes, body: bytes, timestamp: int | None = None) -> str:
    """The ``X-Mrtr-Signature`` value for ``body`` sent at ``timestamp`` (now by default)."""
    t = int(time.time()) if timestamp is None else int(timestamp)
    return f"t={t},{SCHEME}={_mac(secret, t, body)}"


def verify(
    secret: str | bytes,
    header: str | None,
    body: bytes | str,
    tolerance: int = DEFAULT_TOLERANCE,
    now: float | None = None,
) -> bool:
    """Whether ``header`` (the ``X-Mrtr-Signature`` value) signs ``body`` with ``secret``.

    False for a missing or malformed header, a timestamp more than ``tolerance`` seconds
    away from ``now`` (default: the current time), or no matching ``v1`` signature. Several
    ``v1=`` entries are accepted (any may match), so a sender can sign with two secrets while
    one is being rotated.
    """
    if not header:
        return False
    raw = body.encode() if isinstance(body, str) else bytes(body)
    timestamp: int | None = None
    candidates: list[str] = []
    for part in header.split(","):
        name, sep, value = part.strip().partition("=")
        if not sep:
            return False
        if name == "t":
            if timestamp is not None or not value.isdigit():
                return False
            timestamp = int(value)
        elif name == SCHEME:
            candidates.append(value.strip().lower())
    if timestamp is None or not candidates:
        return False
    current = time.time() if now is None else now
    if abs(current - timestamp) > tolerance:
        return False
    expected = _mac(secret, timestamp, raw)
    # compare_digest on every candidate: no early exit that would leak which one matched.
    matched = [hmac.compare_digest(expected, candidate) for candidate in candidates]
    return any(matched)
