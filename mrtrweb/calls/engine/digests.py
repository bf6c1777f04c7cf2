"""How the audit trail keeps a ``requestState``'s SHA-256: 43 characters of unpadded base64url
instead of 64 of hex, since every parked round's event stores one, and those 21 bytes a round
count in what a parked round stores (P5, docs/performance.md). Pages, logs and announcements
show it as hex; events stored in hex read the same. Nothing is lost: the same 256 bits
either way."""

from __future__ import annotations

import base64
import binascii

__all__ = ["DIGEST", "shown", "stored"]

# The detail key under which events keep the digest.
DIGEST = "request_state_sha256"

_HEX_LENGTH = 64
_STORED_LENGTH = 43


def stored(digest: str) -> str:
    """``digest`` (hex) as an event stores it; anything else (an empty digest: no state) kept
    as it is."""
    if len(digest) != _HEX_LENGTH:
        return digest
    try:
        raw = bytes.fromhex(digest)
    except ValueError:
        return digest
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def shown(value: object) -> str:
    """An event's stored digest as hex ("" when there is none); a hex one, stored before,
    as it is."""
    if not isinstance(value, str):
        return ""
    if len(value) == _STORED_LENGTH:
        try:
            raw = base64.urlsafe_b64decode(value + "=")
        except (binascii.Error, ValueError):
            return value
        if len(raw) == _HEX_LENGTH // 2:
            return raw.hex()
    return value
