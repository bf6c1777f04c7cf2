"""Moments as people read them: "in 8 minutes — 2 Dec, 07:29", in the person's own zone and
language.

The zone is Django's current time zone, which ``accounts.timezones.TimeZoneMiddleware``
activates for every request (the account's choice, else the browser's, else UTC); the language
is the active one (``accounts.languages``). Emails, which have no request, are rendered inside
``people.speaking.writing_to(recipient)``, which activates the recipient's own.

Dates use the active language's formats (``mrtrweb/formats/``): "2 Dec, 07:29" in English,
"2. Dez, 07:29" in German. Relative times have their own translated units, in the form that
follows "in"/"vor" in German ("in 3 Tagen", "vor 3 Tagen"), which Django's own (nominative,
"3 Tage") are not.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from functools import cached_property

from django.utils import formats, timezone
from django.utils.timesince import timesince, timeuntil
from django.utils.translation import gettext as _
from django.utils.translation import npgettext_lazy

# Closer than this to now, a moment is "just now" (never "0 minutes ago").
JUST_NOW = dt.timedelta(minutes=1)

# Django's timesince units, said as a relative time ("in 3 days", "3 days ago").
RELATIVE_UNITS = {
    "year": npgettext_lazy("relative time", "%(num)d year", "%(num)d years", "num"),
    "month": npgettext_lazy("relative time", "%(num)d month", "%(num)d months", "num"),
    "week": npgettext_lazy("relative time", "%(num)d week", "%(num)d weeks", "num"),
    "day": npgettext_lazy("relative time", "%(num)d day", "%(num)d days", "num"),
    "hour": npgettext_lazy("relative time", "%(num)d hour", "%(num)d hours", "num"),
    "minute": npgettext_lazy("relative time", "%(num)d minute", "%(num)d minutes", "num"),
}


@dataclass(frozen=True)
class Moment:
    """One moment, said three ways: relative, as a local date, and in full (a tooltip).

    Each way is worked out when first read, in the language active then: a page says one or
    two of them (``{% when %}``), and each costs a formatting of its own."""

    at: dt.datetime
    now: dt.datetime
    tz: dt.tzinfo

    @cached_property
    def local(self) -> dt.datetime:
        return timezone.localtime(self.at, self.tz)

    @cached_property
    def relative(self) -> str:
        """ "in 8 minutes", "5 minutes ago", "just now"."""
        return relative(self.at, self.now)

    @cached_property
    def date(self) -> str:
        """ "2 Dec, 07:29" (the year when it is not this one)."""
        same_year = self.local.year == timezone.localtime(self.now, self.tz).year
        return local_date(self.local, with_year=not same_year)

    @cached_property
    def full(self) -> str:
        """ "2 Dec 2026, 07:29 (Europe/Oslo)"."""
        return f"{local_date(self.local, with_year=True)} ({self.zone})"

    @cached_property
    def zone(self) -> str:
        return zone_name(self.tz, self.local)

    @property
    def both(self) -> str:
        return f"{self.relative} — {self.date}"


def relative(at: dt.datetime, now: dt.datetime | None = None) -> str:
    now = now or timezone.now()
    if abs(at - now) < JUST_NOW:
        return _("just now")
    # Two units at most ("1 hour, 50 minutes"): one alone rounds 1 h 50 down to "1 hour".
    if at > now:
        # django-stubs types time_strings as plain str; Django's own defaults are lazy too.
        span = timeuntil(at, now, time_strings=RELATIVE_UNITS, depth=2)  # type: ignore[arg-type]
        return (_("in %(time)s") % {"time": span}).replace("\xa0", " ")
    span = timesince(at, now, time_strings=RELATIVE_UNITS, depth=2)  # type: ignore[arg-type]
    return (_("%(time)s ago") % {"time": span}).replace("\xa0", " ")


def local_date(local: dt.datetime, *, with_year: bool) -> str:
    """A local moment as the active language writes it, to the minute."""
    if with_year:
        return formats.date_format(local, "SHORT_DATETIME_FORMAT")
    day = formats.date_format(local, "MONTH_DAY_FORMAT")
    return f"{day}, {formats.time_format(local, 'TIME_FORMAT')}"


def moment(at: dt.datetime, now: dt.datetime | None = None, tz: dt.tzinfo | None = None) -> Moment:
    return Moment(at=at, now=now or timezone.now(), tz=tz or timezone.get_current_timezone())


def zone_name(tz: dt.tzinfo, local: dt.datetime) -> str:
    return str(getattr(tz, "key", None) or local.tzname() or "UTC")


def moment_in_zone(at: dt.datetime, tz: dt.tzinfo | None = None) -> str:
    """For emails, which have no page to hover on: the date with its zone named, "2 Dec 2026,
    07:29 Europe/Oslo", in the active zone (the recipient's, under ``writing_to``)."""
    tz = tz or timezone.get_current_timezone()
    local = timezone.localtime(at, tz)
    return f"{local_date(local, with_year=True)} {zone_name(tz, local)}"


def moment_in_utc(at: dt.datetime) -> str:
    """ "2 Dec 2026, 07:29 UTC": where no reader's zone is known."""
    return f"{local_date(timezone.localtime(at, dt.UTC), with_year=True)} UTC"
