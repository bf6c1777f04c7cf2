"""``Retry-After`` (RFC 9110 section 10.2.3) as seconds from now.

One parser for every HTTP client in mrtrweb: the MCP transport (429/503 from a server) and
the webhook sender (429/503 from a receiver). Standard library only, so it may be imported
from outside :mod:`mrtrweb.mcp` without pulling the client in.
"""

from __future__ import annotations

from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

__all__ = ["MAX_RETRY_AFTER", "retry_after_seconds"]

# A peer asking for more than a day is trusted no further.
MAX_RETRY_AFTER = 24 * 3600.0
# Delta-seconds beyond what a 31-bit counter holds (RFC 9111 section 1.2.2) is no wait any
# server means: a broken header, read as none rather than as "a day".
LARGEST_DELTA = 2**31


def retry_after_seconds(value: str | None, *, now: datetime | None = None) -> float | None:
    """Seconds to wait: delta-seconds (``120``) or an HTTP-date (``Wed, 21 Oct 2015 07:28:00
    GMT``; a date in the past means now), capped at a day. ``None`` when the header is
    missing or neither form: junk such as ``abc``, ``-5``, ``²`` (a digit, but not ASCII) or a
    number of more than 2**31 seconds never raises."""
    if not value:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():
        if len(value) > len(str(LARGEST_DELTA)) or int(value) > LARGEST_DELTA:
            return None
        return min(float(value), MAX_RETRY_AFTER)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, OverflowError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    delta = (when - (now or datetime.now(UTC))).total_seconds()
    return min(max(delta, 0.0), MAX_RETRY_AFTER)
