"""What a request mrtrweb sent says in words, without its opaque parts.

A request to a server carries random strings: the round's ``requestState`` (base64), the
JSON-RPC ``id`` and the ``progressToken`` (hex). A short word such as a username occurs in
them by chance now and then, so a test proving that something is *not* sent looks only at the
rest: every header value, and every key and string value of the JSON body outside those.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

OPAQUE = frozenset({"id", "requestState", "progressToken"})


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            if key not in OPAQUE:
                yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def readable(request: dict[str, Any]) -> list[str]:
    """The header values and the body's keys and strings (its opaque values left out) of a
    request a peer recorded (``{"headers": [[name, value], ...], "json": {...}}``)."""
    headers = [value for _, value in request.get("headers") or []]
    return [*headers, *_strings(request.get("json"))]


def says(request: dict[str, Any], words: str) -> bool:
    """Whether ``words`` occur anywhere readable in ``request``."""
    return any(words in text for text in readable(request))
