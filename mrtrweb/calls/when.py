"""Moments as people read them: "in 8 minutes — 2 Dec, 07:29", in the person's own zone.

The zone is Django's current time zone, which ``accounts.timezones.TimeZoneMiddleware``
activates for every request (the account's choice, else the browser's, else UTC). Emails have
no request: they say their zone (:func:`moment_in_utc`).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.utils import timezone
from django.utils.dateformat import format as date_format
from django.utils.timesince import timesince, timeuntil

# Closer than this to now, a moment is "just now" (never "0 minutes ago").
JUST_NOW = dt.timedelta(minutes=1)


@dataclass(frozen=True)
class Moment:
    """One moment, said three ways: relative, as a local date, and in full (a tooltip)."""

    at: dt.datetime
    relative: str  # "in 8 minutes", "5 minutes ago", "just now"
    date: str  # "2 Dec, 07:29" (the year when it is not this one)
    full: str  # "2 Dec 2026, 07:29 (Europe/Oslo)"
    zone: str  # the zone's name
    future: bool

    @property
    def both(self) -> str:
        return f"{self.relative} — {self.date}"


def relative(at: dt.datetime, now: dt.datetime | None = None) -> str:
    now = now or timezone.now()
    if abs(at - now) < JUST_NOW:
        return "just now"
    # Two units at most ("1 hour, 50 minutes"): one alone rounds 1 h 50 down to "1 hour".
    if at > now:
        return f"in {timeuntil(at, now, depth=2)}".replace("\xa0", " ")
    return f"{timesince(at, now, depth=2)} ago".replace("\xa0", " ")


def moment(at: dt.datetime, now: dt.datetime | None = None, tz: dt.tzinfo | None = None) -> Moment:
    now = now or timezone.now()
    tz = tz or timezone.get_current_timezone()
    local = timezone.localtime(at, tz)
    same_year = local.year == timezone.localtime(now, tz).year
    zone = str(getattr(tz, "key", None) or local.tzname() or "UTC")
    return Moment(
        at=at,
        relative=relative(at, now),
        date=date_format(local, "j M, H:i" if same_year else "j M Y, H:i"),
        full=f"{date_format(local, 'j M Y, H:i')} ({zone})",
        zone=zone,
        future=at > now,
    )


def moment_in_utc(at: dt.datetime) -> str:
    """For emails, which have no reader's zone: "2 Dec 2026, 07:29 UTC"."""
    return f"{date_format(timezone.localtime(at, dt.UTC), 'j M Y, H:i')} UTC"
