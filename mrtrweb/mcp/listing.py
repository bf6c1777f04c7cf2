"""List operations: every page of ``tools/list`` and the like, and their caches.

A listing is cached for its ``ttlMs`` (capped at a day): ``public`` ones in the process, shared
by every client of the endpoint; ``private`` ones only in the client that fetched them, i.e.
under its credentials (spec: server/utilities/caching).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ValidationError

from .errors import ProtocolError
from .headers import invalid_x_mcp_header

__all__ = ["MAX_PAGES", "MAX_TTL_MS", "Listing", "ListingCache", "list_all"]

logger = logging.getLogger(__name__)

ItemT = TypeVar("ItemT", bound=BaseModel)
Request = Callable[[str, Mapping[str, Any]], Awaitable[dict[str, Any]]]

# The SDK caps cache lifetimes at a day; a server asking for more is trusted no further.
MAX_TTL_MS = 24 * 60 * 60 * 1000
# A listing that never ends is refused after this many pages. Each page is a request made
# while a page of the app waits (the catalog is listed on the start page): 1,000 took 6 s.
MAX_PAGES = 100


@dataclass(slots=True)
class Listing(Generic[ItemT]):
    """All pages of a list operation."""

    items: list[ItemT]
    ttl_ms: int = 0
    cache_scope: Literal["public", "private"] = "private"
    # Tools left out because their x-mcp-header annotations are invalid: (name, reason).
    dropped: list[tuple[str, str]] = field(default_factory=list)


# Listings with cacheScope "public", shared by every client of the same endpoint.
_PUBLIC_LISTINGS: dict[tuple[str, str], tuple[float, Listing[Any]]] = {}


class ListingCache:
    """The listings of one client: its private ones, and the public ones of its endpoint."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._private: dict[str, tuple[float, Listing[Any]]] = {}

    def get(self, method: str) -> Listing[Any] | None:
        now = time.monotonic()
        for entry in (self._private.get(method), _PUBLIC_LISTINGS.get((self._url, method))):
            if entry is not None and entry[0] > now:
                return entry[1]
        return None

    def put(self, method: str, listing: Listing[Any]) -> None:
        if listing.ttl_ms <= 0:
            return
        expires = time.monotonic() + min(listing.ttl_ms, MAX_TTL_MS) / 1000
        if listing.cache_scope == "public":
            _PUBLIC_LISTINGS[(self._url, method)] = (expires, listing)
        else:
            # Private entries live only in this client, i.e. under these credentials.
            self._private[method] = (expires, listing)


async def list_all(request: Request, method: str, key: str, model: type[ItemT]) -> Listing[ItemT]:
    """Every page of ``method`` (``request`` sends one), items under ``key`` as ``model``."""
    items: list[ItemT] = []
    dropped: list[tuple[str, str]] = []
    ttl: int | None = None
    scope: Literal["public", "private"] = "public"
    cursor: str | None = None
    seen_cursors: set[str] = set()
    for _ in range(MAX_PAGES):
        result = await request(method, {"cursor": cursor} if cursor is not None else {})
        if result.get("resultType", "complete") != "complete":
            raise ProtocolError(f"{method}: unexpected resultType {result.get('resultType')!r}")
        page = result.get(key)
        if not isinstance(page, list):
            raise ProtocolError(f"{method}: {key} is not a list")
        for raw_item in page:
            item = _list_item(method, model, raw_item, dropped)
            if item is not None:
                items.append(item)
        page_ttl = result.get("ttlMs")
        # Absent or negative ttlMs means immediately stale.
        page_ttl = page_ttl if isinstance(page_ttl, int) and page_ttl > 0 else 0
        ttl = page_ttl if ttl is None else min(ttl, page_ttl)
        if result.get("cacheScope") != "public":
            scope = "private"
        cursor = result.get("nextCursor")
        # Only a missing or null cursor ends the list; "" is a valid cursor.
        if cursor is None:
            break
        if not isinstance(cursor, str):
            raise ProtocolError(f"{method}: nextCursor is not a string")
        if cursor in seen_cursors:
            raise ProtocolError(f"{method}: the server repeated cursor {cursor!r}")
        seen_cursors.add(cursor)
    else:
        raise ProtocolError(f"{method}: more than {MAX_PAGES} pages")
    return Listing(items, ttl or 0, scope, dropped)


def _list_item(
    method: str, model: type[ItemT], raw_item: Any, dropped: list[tuple[str, str]]
) -> ItemT | None:
    name = raw_item.get("name", "?") if isinstance(raw_item, dict) else "?"
    if method == "tools/list" and isinstance(raw_item, dict):
        reason = invalid_x_mcp_header(raw_item.get("inputSchema"))
        if reason is not None:
            logger.warning("dropping tool %r: invalid x-mcp-header (%s)", name, reason)
            dropped.append((str(name), reason))
            return None
    try:
        return model.model_validate(raw_item)
    except ValidationError as exc:
        raise ProtocolError(f"{method}: malformed item {name!r}: {exc.errors()[:3]}") from exc
