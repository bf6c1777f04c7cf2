"""How to write to a person who is not reading a page (an email): in their language and their
time zone, as chosen on their account page (``accounts.models.Preferences``), else the site's
defaults (``LANGUAGE_CODE``, ``TIME_ZONE``). Never the sender's, whose request may be active.

Here, below every app, so that the engine's notifications (``calls.emails.notices``) and the pages'
emails (password reset, invitations) share it. The preferences are read through the user's
reverse relation (``user.preferences``), so this module needs no app's models.
"""

from __future__ import annotations

import datetime as dt
import zoneinfo
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.utils import timezone, translation


def _preferences(user: User) -> Any:
    # No row yet: RelatedObjectDoesNotExist is an AttributeError, so getattr's default covers it.
    return getattr(user, "preferences", None) if user is not None else None


def language_of(user: User) -> str:
    """The language to write to ``user`` in: their choice if the site offers it, else its own."""
    code = getattr(_preferences(user), "language", "")
    return code if code in dict(settings.LANGUAGES) else settings.LANGUAGE_CODE


def zone_of(user: User) -> dt.tzinfo:
    """The zone to give ``user`` times in: their choice if it is a known zone, else the site's."""
    name = getattr(_preferences(user), "time_zone", "")
    if isinstance(name, str) and name:
        try:
            return zoneinfo.ZoneInfo(name)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            pass
    return timezone.get_default_timezone()


@contextmanager
def writing_to(user: User) -> Iterator[None]:
    """While rendering what ``user`` will read: their language and their time zone."""
    with translation.override(language_of(user)), timezone.override(zone_of(user)):
        yield
