"""Two-step sign-in pages: the code asked after signing in, setting up an authenticator app
(QR code and secret, confirmed with a code, then backup codes shown once), and a person's own
page to make new backup codes or turn it off.

Secrets and backup codes exist in clear only in the response that shows them: never in a
redirect, a message or a cache (``never_cache``).
"""

from __future__ import annotations

from base64 import b32encode
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext_lazy as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST
from django_otp import login as otp_login

from mrtrweb.http import SeeOther, SignedInRequest

from . import second_factor
from .forms import CodeForm
from .qr import svg_data_uri

APP_HELP = "The six digits your authenticator app shows for mrtrweb."
SIGN_IN_HELP = "The six digits your authenticator app shows, or one of your backup codes."


def _next(request: HttpRequest) -> str:
    wanted = request.POST.get("next") or request.GET.get("next") or ""
    if wanted and url_has_allowed_host_and_scheme(
        wanted, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return wanted
    return reverse("core:home")


def _verified(request: HttpRequest, device: Any) -> None:
    # A new session key for the raised privilege, as signing in gets one.
    request.session.cycle_key()
    otp_login(request, device)
    request.session.pop(second_factor.CODE_PENDING, None)


@never_cache
@login_required
@require_http_methods(["GET", "POST"])
def verify(request: SignedInRequest) -> HttpResponse:
    """The code asked of a person with a device before their session counts as verified."""
    user = request.user
    if second_factor.is_verified(user):
        return SeeOther(_next(request))
    if not second_factor.has_code_device(user):
        request.session.pop(second_factor.CODE_PENDING, None)
        if second_factor.is_required(user):
            return SeeOther(f"{reverse('accounts:enrol')}?{request.GET.urlencode()}")
        return SeeOther(_next(request))
    form = CodeForm(
        request.POST or None,
        check=lambda code: second_factor.check_code(user, code),
        help_text=SIGN_IN_HELP,
    )
    if request.method == "POST" and form.is_valid():
        assert form.checked is not None and form.checked.device is not None
        _verified(request, form.checked.device)
        return SeeOther(_next(request))
    status = 422 if form.is_bound else 200
    return render(
        request, "accounts/verify.html", {"form": form, "next": _next(request)}, status=status
    )


@never_cache
@login_required
@require_http_methods(["GET", "POST"])
def enrol(request: SignedInRequest) -> HttpResponse:
    """Set up an authenticator app: scan (or type) the secret, confirm with a code, then the
    backup codes, once."""
    user = request.user
    if second_factor.has_code_device(user):
        # Replacing an app is turning two-step off first (or an admin's reset).
        if not second_factor.is_verified(user):
            return SeeOther(f"{reverse('accounts:verify')}?{request.GET.urlencode()}")
        return SeeOther(reverse("accounts:two_step"))
    device = second_factor.enrolment_device(user)
    form = CodeForm(
        request.POST or None,
        check=lambda code: second_factor.confirm_enrolment(device, code),
        help_text=APP_HELP,
    )
    if request.method == "POST" and form.is_valid():
        codes = second_factor.finish_enrolment(device)
        _verified(request, device)
        return render(
            request,
            "accounts/backup_codes.html",
            {"codes": codes, "next": _next(request), "enrolled": True},
        )
    secret = b32encode(device.bin_key).decode("ascii")
    context = {
        "form": form,
        "next": _next(request),
        "required": second_factor.is_required(user),
        "qr": svg_data_uri(device.config_url),
        # In groups of four, as authenticator apps show and accept them.
        "secret": " ".join(secret[i : i + 4] for i in range(0, len(secret), 4)),
    }
    return render(request, "accounts/enrol.html", context, status=422 if form.is_bound else 200)


@never_cache
@login_required
@require_http_methods(["GET"])
def two_step(request: SignedInRequest) -> HttpResponse:
    """A person's own page: whether two-step sign-in is on, and what they can do about it."""
    user = request.user
    context = {
        "app": second_factor.app_device(user),
        "codes_left": second_factor.backup_codes_left(user),
        "required": second_factor.is_required(user),
    }
    return render(request, "accounts/two_step.html", context)


@never_cache
@login_required
@require_POST
def backup_codes(request: SignedInRequest) -> HttpResponse:
    """New backup codes (the old ones stop working), shown once."""
    if not second_factor.has_code_device(request.user):
        return SeeOther(reverse("accounts:two_step"))
    codes = second_factor.new_backup_codes(request.user)
    return render(
        request,
        "accounts/backup_codes.html",
        {"codes": codes, "next": reverse("accounts:two_step"), "enrolled": False},
    )


@login_required
@require_POST
def turn_off(request: SignedInRequest) -> HttpResponse:
    user = request.user
    if second_factor.is_required(user):
        messages.error(
            request,
            _(
                "Admins and operators must keep two-step sign-in. If you lost your phone, "
                "ask an admin to reset it, then set it up again."
            ),
        )
        return SeeOther(reverse("accounts:two_step"))
    second_factor.remove_devices(user)
    request.session.pop(second_factor.CODE_PENDING, None)
    messages.success(request, _("Two-step sign-in is off: signing in asks only for your password."))
    return SeeOther(reverse("accounts:two_step"))
