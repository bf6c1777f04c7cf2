"""The server's side of the base64 sentinel (SEP-2243): what a server reads from a header
our client wrote. Only tests need it; the client only encodes."""

from __future__ import annotations

import base64
import re

_SENTINEL = re.compile(r"=\?base64\?(?P<payload>.*)\?=", re.DOTALL)


def decode_header_value(value: str) -> str | None:
    """Inverse of ``mrtrweb.mcp.headers.encode_header_value``; ``None`` for a malformed
    sentinel."""
    match = _SENTINEL.fullmatch(value)
    if match is None:
        return value
    try:
        return base64.b64decode(match["payload"], validate=True).decode("utf-8")
    except ValueError:
        return None
