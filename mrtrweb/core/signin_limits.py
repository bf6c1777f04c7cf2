"""Limits on failed sign-ins (django-axes): what a success forgives and the lockout page.

Axes counts failures, refuses a paused account or address before its password is checked,
and calls :func:`locked_out` for the page; the rule itself is in settings (``AXES_*``).
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

from axes.handlers.database import AxesDatabaseHandler
from axes.handlers.proxy import AxesProxyHandler
from axes.helpers import get_client_username, get_cool_off, get_failure_limit
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

LOCKOUT_TEMPLATE = "registration/locked_out.html"


class SignInLimitsHandler(AxesDatabaseHandler):
    """Axes' database handler, except that a successful sign-in forgives only the failures
    against that account.

    Axes would also forget every failure from the same address, those against other accounts
    included: someone with one working password could then keep guessing everyone else's,
    signing in between tries.
    """

    def reset_user_attempts(self, request: HttpRequest, credentials: dict | None = None) -> int:
        username = get_client_username(request, credentials)
        if not username:
            return 0
        return self.reset_attempts(username=username)


def locked_until(request: HttpRequest, credentials: dict | None = None) -> datetime:
    """When signing in from this request's address, as the username it sent, is possible again.

    A pause lasts while the failures counted against one entry of the rule (an account, an
    address) and younger than the cool-off still reach the limit, so it ends when the one that
    made the count reach the limit, counting back from the newest, grows too old.
    """
    cool_off = get_cool_off(request)
    now = timezone.now()
    if cool_off is None:  # a pause without end (not this project's settings)
        return now
    limit = get_failure_limit(request, credentials)
    handler = AxesProxyHandler.get_implementation()
    ends = [now]
    for attempts in handler.get_user_attempts(request, credentials):
        counted = 0
        for at, failures in attempts.order_by("-attempt_time").values_list(
            "attempt_time", "failures_since_start"
        ):
            counted += failures
            if counted >= limit:
                ends.append(at + cool_off)
                break
    return max(ends)


def locked_out(
    request: HttpRequest, response: Any = None, credentials: dict | None = None
) -> HttpResponse:
    """The lockout page (``AXES_LOCKOUT_CALLABLE``): 429, when to try again, and nothing
    that tells whether the account exists (any username typed gets the same page)."""
    # Axes' async middleware passes the credentials where the view's response should go.
    if credentials is None and isinstance(response, dict):
        credentials = response
    until = locked_until(request, credentials)
    seconds = max(0, math.ceil((until - timezone.now()).total_seconds()))
    page = render(
        request,
        LOCKOUT_TEMPLATE,
        {"until": until, "minutes": max(1, math.ceil(seconds / 60))},
        status=settings.AXES_HTTP_RESPONSE_CODE,
    )
    page["Retry-After"] = str(seconds)
    return page
