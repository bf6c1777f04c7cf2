"""Keeps a signed-in person who must pass a second factor on the pages that let them.

After ``OTPMiddleware``. A session that is not verified goes to the code page when its person
has a code device (noted at sign-in, :mod:`.signals`), or to enrolment when the person is an
admin, operator or staff member without one; sign-out, sign-in, those pages themselves, the
JSON API (tokens, never sessions) and the health checks stay open. The Django admin is under
the same rule.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django_htmx.http import HttpResponseClientRedirect

from .second_factor import CODE_PENDING, has_code_device, is_required, is_verified

# Paths any signed-in session may reach unverified (prefixes).
OPEN_PATHS = ("/api/", "/healthz", "/readyz", "/static/", "/oidc/")
OPEN_NAMES = ("login", "logout", "accounts:verify", "accounts:enrol")


class SecondFactorMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        step = _step_due(request)
        if step is None or _is_open(request.path):
            return self.get_response(request)
        return _send(request, step)


def _step_due(request: HttpRequest) -> str | None:
    """The page this session must pass first, if any."""
    user = request.user
    if not user.is_authenticated or is_verified(user):
        return None
    if request.session.get(CODE_PENDING) or (is_required(user) and has_code_device(user)):
        return "accounts:verify"
    if is_required(user):
        return "accounts:enrol"
    return None


def _is_open(path: str) -> bool:
    return path.startswith(OPEN_PATHS + tuple(reverse(name) for name in OPEN_NAMES))


def _send(request: HttpRequest, name: str) -> HttpResponse:
    # Back to the page asked for afterwards; a form's POST cannot be replayed, so its page.
    url = f"{reverse(name)}?{urlencode({'next': request.get_full_path()})}"
    # htmx would swap the page into a fragment; it is told to go there instead.
    if request.headers.get("HX-Request") == "true":
        return HttpResponseClientRedirect(url)
    return HttpResponseRedirect(url)
