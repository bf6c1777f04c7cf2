"""Which language a page is shown in, per request: the person's own.

Django's ``LocaleMiddleware`` (before the session is read by anyone else) picks the language
from the language cookie, else the browser's ``Accept-Language``, among ``settings.LANGUAGES``.
``LanguageMiddleware``, after authentication, lets the language chosen on the account page win
over both, and keeps the cookie in step so that the pages before sign-in (and after sign-out)
speak it too.

Like the time zone (``timezones.py``), the account's choice is read once per session (at
sign-in, ``signals.note_preferences``, or on the first page of an older session) and refreshed
when the account page saves it.

Emails speak their recipient's language, not the reader's: ``mrtrweb.people.speaking``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils import translation
from django.utils.translation.trans_real import parse_accept_lang_header

SESSION_KEY = "accounts.language"  # [user pk, language code or ""]


def known(code: Any) -> str:
    """``code`` if it is one of the site's languages, else "" (a stored choice of a language
    the site no longer offers falls back to the browser's)."""
    if isinstance(code, str) and code in dict(settings.LANGUAGES):
        return code
    return ""


def account_language(request: HttpRequest) -> str:
    """The language this person chose on the account page ("" for none), read once a session."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return ""
    session = getattr(request, "session", None)
    kept = session.get(SESSION_KEY) if session is not None else None
    if isinstance(kept, list) and len(kept) == 2 and kept[0] == user.pk:
        return known(kept[1])
    from .models import Preferences  # the models load after the middleware module

    code = Preferences.objects.filter(user=user).values_list("language", flat=True).first() or ""
    remember(request, code)
    return known(code)


def remember(request: HttpRequest, code: str) -> None:
    session = getattr(request, "session", None)
    if session is not None:
        session[SESSION_KEY] = [request.user.pk, code]


def set_cookie(response: HttpResponse, code: str) -> None:
    """The language cookie LocaleMiddleware reads: ``code``, or none (follow the browser)."""
    if code:
        response.set_cookie(
            settings.LANGUAGE_COOKIE_NAME,
            code,
            max_age=settings.LANGUAGE_COOKIE_AGE,
            path=settings.LANGUAGE_COOKIE_PATH,
            domain=settings.LANGUAGE_COOKIE_DOMAIN,
            secure=settings.LANGUAGE_COOKIE_SECURE,
            httponly=settings.LANGUAGE_COOKIE_HTTPONLY,
            samesite=settings.LANGUAGE_COOKIE_SAMESITE,
        )
    else:
        response.delete_cookie(
            settings.LANGUAGE_COOKIE_NAME,
            path=settings.LANGUAGE_COOKIE_PATH,
            domain=settings.LANGUAGE_COOKIE_DOMAIN,
            samesite=settings.LANGUAGE_COOKIE_SAMESITE,
        )


def browser_language(request: HttpRequest) -> str:
    """The site's language the browser asks for first (Accept-Language), else the default."""
    header = request.META.get("HTTP_ACCEPT_LANGUAGE", "")
    for code, _quality in parse_accept_lang_header(header):
        if code == "*":
            break
        try:
            return translation.get_supported_language_variant(code)
        except LookupError:
            continue
    return settings.LANGUAGE_CODE


class LanguageMiddleware:
    """After the authentication middleware: the account's language, when chosen, wins."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        chosen = account_language(request)
        if chosen:
            translation.activate(chosen)
            request.LANGUAGE_CODE = chosen
        response = self.get_response(request)
        # Not deactivated: LocaleMiddleware's response half still reads it (Content-Language).
        if chosen and request.COOKIES.get(settings.LANGUAGE_COOKIE_NAME) != chosen:
            set_cookie(response, chosen)
        return response
