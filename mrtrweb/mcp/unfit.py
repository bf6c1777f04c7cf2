"""What a server sent must be storable and showable: finite numbers and real Unicode text.

Python's ``json`` module reads ``NaN``, ``Infinity`` and ``-Infinity`` (which are not JSON,
RFC 8259 section 6), reads a number too big for a float (``1e999``) as infinity, and keeps a
lone UTF-16 surrogate escape (``"\\ud800"``) as a lone surrogate, which no UTF-8 encoder
takes. Each passes the client unnoticed and breaks whatever comes next: the database refuses
the JSON (SQLite's ``JSON_VALID``, PostgreSQL's ``jsonb``), a page holding the text cannot be
encoded (a 500 on every view of the call), a requestState cannot be hashed. So each message
is looked over once, right after it is parsed, and refused as a protocol error if it holds
either.
"""

from __future__ import annotations

import math
import re
from typing import Any

__all__ = ["unfit"]

# json.loads joins a valid surrogate pair into one character, so any surrogate left is alone.
_SURROGATE = re.compile("[\ud800-\udfff]")


def unfit(value: Any) -> str | None:
    """Why parsed JSON ``value`` cannot be kept, or None when it can. Walks the value with a
    stack rather than recursion, so however deeply it nests, this does not fail."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if not item.isascii() and _SURROGATE.search(item):
                return "text that is not valid Unicode (a lone UTF-16 surrogate)"
        elif isinstance(item, float):
            if not math.isfinite(item):
                return "a number that is not finite (NaN, Infinity, or too large for a float)"
        elif isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return None
