"""Webhook signatures: ``X-Mrtr-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256>``.

The MAC is HMAC-SHA256, keyed with the API token's webhook secret (its UTF-8 bytes), over
``b"<t>." + <the raw request body bytes>``. A receiver recomputes it over the body exactly as
received (before any JSON parsing) and refuses timestamps further than ``tolerance`` seconds
from its own clock, so a captured request cannot be replayed later.

This module uses the standard library only, so receivers can copy it as it is
(docs/api.md, "Webhooks", shows how).
"""

from __future__ import annotations

import hashlib
import hmac
import time

SCHEME = "v1"
DEFAULT_TOLERANCE = 300


def _mac(secret: str | bytes, timestamp: int, body: bytes) -> str:
    key = secret.encode() if isinstance(secret, str) else secret
    return hmac.new(key, f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()


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
