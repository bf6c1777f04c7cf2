"""Server-sent text made fit for one line: a message, a log line, an email subject, a header.

Control characters (CR and LF above all: header injection), Unicode line and paragraph
separators and bidirectional overrides (which make text read other than it is) become spaces,
runs of whitespace become one, and the result is cut to a length.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["one_line"]

# Bidirectional embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069).
_BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_SPACES = re.compile(r"\s+")


def _unsafe(char: str) -> bool:
    return char in _BIDI or unicodedata.category(char) in ("Cc", "Zl", "Zp")


def one_line(text: str, limit: int = 200) -> str:
    """``text`` on one line of at most ``limit`` characters (an ellipsis marks a cut)."""
    cleaned = "".join(" " if _unsafe(c) else c for c in text)
    cleaned = _SPACES.sub(" ", cleaned).strip()
    if len(cleaned) > limit:
        cleaned = cleaned[: max(limit - 1, 0)].rstrip() + "…"
    return cleaned
