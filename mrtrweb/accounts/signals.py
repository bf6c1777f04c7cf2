"""At sign-in, the session notes whether this person has a code device to verify with."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.contrib.auth.signals import user_logged_in
from django.dispatch import receiver

from . import languages
from .second_factor import CODE_PENDING, has_code_device
from .timezones import SESSION_KEY


@receiver(user_logged_in, dispatch_uid="mrtrweb.accounts.code_pending")
def note_code_device(sender: Any, request: Any, user: User, **kwargs: Any) -> None:
    session = getattr(request, "session", None)
    if session is None:
        return
    if has_code_device(user):
        session[CODE_PENDING] = True
    else:
        session.pop(CODE_PENDING, None)


@receiver(user_logged_in, dispatch_uid="mrtrweb.accounts.time_zone")
def note_time_zone(sender: Any, request: Any, user: User, **kwargs: Any) -> None:
    """The account's time zone and language, kept in the new session: pages then need no query
    for them."""
    session = getattr(request, "session", None)
    if session is None:
        return
    from .models import Preferences

    name, language = Preferences.objects.filter(user=user).values_list(
        "time_zone", "language"
    ).first() or ("", "")
    session[SESSION_KEY] = [user.pk, name or ""]
    session[languages.SESSION_KEY] = [user.pk, language or ""]
