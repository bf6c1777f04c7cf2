"""JSON from a server, parsed only when it is nested no deeper than a limit.

``json.loads`` recurses once per level: a body nested 100,000 deep raises ``RecursionError``
(which is not a ``ValueError``), and one nested a few hundred deep parses but then breaks
whatever recurses over it next (pydantic's serializer gives up at 255 levels). So the depth is
measured first, without recursion and at C speed: strings are cut out with one regular
expression, everything but brackets is deleted, and a running sum finds the deepest point.
"""

from __future__ import annotations

import json
import re
from itertools import accumulate
from typing import Any

from .errors import TooDeeplyNested

__all__ = ["DEFAULT_MAX_DEPTH", "json_depth", "loads"]

DEFAULT_MAX_DEPTH = 64

# A JSON string (the unrolled form: no backtracking per character, fast on long strings).
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_ALL_BYTES = bytes(range(256))
_NOT_BRACKETS = bytes(b for b in _ALL_BYTES if b not in b"[]{}")
# +1 for an opening bracket, -1 for a closing one.
_STEP = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}


def json_depth(text: bytes | str) -> int:
    """How deeply ``text`` nests arrays and objects (0 for a scalar), counted without
    recursion. For text that is not JSON the figure means little, but it is never wrong
    about valid JSON."""
    data = text.encode("utf-8", errors="surrogatepass") if isinstance(text, str) else text
    # An unterminated string swallows nothing: its brackets count, which only errs deeper.
    brackets = _STRING.sub(b"", data).translate(None, _NOT_BRACKETS)
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0)


def loads(text: bytes | str, *, max_depth: int = DEFAULT_MAX_DEPTH) -> Any:
    """``json.loads``, refusing text nested deeper than ``max_depth`` with
    :class:`TooDeeplyNested`. Invalid JSON raises ``ValueError`` as ``json.loads`` does."""
    depth = json_depth(text)
    if depth > max_depth:
        raise TooDeeplyNested(max_depth)
    try:
        return json.loads(text)
    except RecursionError as exc:  # a limit set above what this thread's stack allows
        raise TooDeeplyNested(max_depth) from exc
