"""Which time zone a page is shown in, per request: the person's own.

``TimeZoneMiddleware`` activates, in order: the zone chosen on the account page; else the one
the browser reported (``static/mrtrweb/timezone.js`` keeps it in a cookie, no inline script);
else UTC. ``request.time_zone_source`` says which ("account", "browser", "default"), so a page
shown in the default can say so instead of passing UTC off as the reader's own time.

The account's choice is read once per session (at sign-in, ``signals.note_time_zone``, or on
the first page of an older session; kept there, and refreshed when the account page saves it):
pages cost no extra query for it. Another session of the same person sees a change when it
signs in again.
"""

from __future__ import annotations

import datetime as dt
import zoneinfo
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.utils import timezone

COOKIE = "mrtrweb_tz"
SESSION_KEY = "accounts.time_zone"  # [user pk, zone name or ""]


@lru_cache(maxsize=1)
def zone_names() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones())


def zone(name: Any) -> zoneinfo.ZoneInfo | None:
    """The zone called ``name``, or None for anything that is not a known IANA zone name (a
    cookie is the browser's to write: never trusted further than that)."""
    if not isinstance(name, str) or name not in zone_names():
        return None
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return None


def account_zone_name(request: HttpRequest) -> str:
    """The zone this person chose on the account page ("" for none), read once a session."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return ""
    session = getattr(request, "session", None)
    kept = session.get(SESSION_KEY) if session is not None else None
    if isinstance(kept, list) and len(kept) == 2 and kept[0] == user.pk:
        return str(kept[1])
    from .models import Preferences  # the models load after the middleware module

    name = Preferences.objects.filter(user=user).values_list("time_zone", flat=True).first() or ""
    remember(request, name)
    return name


def remember(request: HttpRequest, name: str) -> None:
    session = getattr(request, "session", None)
    if session is not None:
        session[SESSION_KEY] = [request.user.pk, name]


def choose(request: HttpRequest) -> tuple[dt.tzinfo, str]:
    """(the zone, where it came from) for this request."""
    chosen = zone(account_zone_name(request))
    if chosen is not None:
        return chosen, "account"
    browser = zone(request.COOKIES.get(COOKIE))
    if browser is not None:
        return browser, "browser"
    return dt.UTC, "default"


class TimeZoneMiddleware:
    """After the authentication middleware: activates the person's zone for the request."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        tz, source = choose(request)
        request.time_zone = tz  # type: ignore[attr-defined]
        request.time_zone_source = source  # type: ignore[attr-defined]
        timezone.activate(tz)
        try:
            return self.get_response(request)
        finally:
            timezone.deactivate()
