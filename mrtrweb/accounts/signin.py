"""Signing in with a password, and setting a new one by email.

Django's own views (``django.contrib.auth.views``) with our forms and templates
(templates/registration/). Two things differ from Django's defaults:

- the sign-in form's errors say plainly what went wrong;
- the reset link in the email is built on ``settings.MRTRWEB_BASE_URL`` (the site's public
  address), never on the ``Host`` header of the request that asked for it: a forged header
  must not be able to send a person's reset link to someone else's site;
- a new password, changed or set by email, ends the person's other sessions and closes their
  sockets at once, not when they next make a request (the session that changed it stays).

Django's reset form already reveals nothing about unknown addresses (the same "check your
email" page follows, and no email is sent), sends nothing to inactive people or to those who
sign in only through single sign-on (no usable password), and its link works once: the token
is bound to the password hash, which the reset changes. At most ``RESETS_PER_ADDRESS`` emails
go to one address an hour, whoever asks.
"""

from __future__ import annotations

import hashlib
from typing import Any

from django.conf import settings
from django.contrib.auth import logout
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import AuthenticationForm, PasswordResetForm
from django.core.cache import cache
from django.http import HttpResponse, HttpResponseRedirect
from django.utils.translation import gettext_lazy as _

from mrtrweb.people.speaking import writing_to

from .sessions import end_other_sessions

RESET_EMAIL = "registration/password_reset_email.txt"
RESET_SUBJECT = "registration/password_reset_subject.txt"


class SignInForm(AuthenticationForm):
    error_messages = {
        **AuthenticationForm.error_messages,
        "invalid_login": _(
            "That username and password do not match an account here. Both are case-sensitive."
        ),
        "inactive": _(
            "This account is switched off. An administrator of this site can switch it on."
        ),
    }


class SignIn(auth_views.LoginView):
    authentication_form = SignInForm
    redirect_authenticated_user = False


def base_url() -> str:
    return settings.MRTRWEB_BASE_URL.rstrip("/")


class ResetForm(PasswordResetForm):
    def send_mail(self, *args: Any, **kwargs: Any) -> None:
        # In the account's own language, not that of whoever typed the address.
        context = kwargs.get("context", args[2] if len(args) > 2 else {})
        with writing_to(context.get("user")):
            super().send_mail(*args, **kwargs)


class PasswordReset(auth_views.PasswordResetView):
    form_class = ResetForm
    email_template_name = RESET_EMAIL
    subject_template_name = RESET_SUBJECT

    def form_valid(self, form: Any) -> HttpResponse:
        if not _may_send_to(form.cleaned_data["email"]):
            # The same page as ever: the limit says nothing about the address either.
            return HttpResponseRedirect(self.get_success_url())
        # Read at each request, so a changed setting (and a test's) applies.
        self.extra_email_context = {"base_url": base_url()}
        return super().form_valid(form)


class PasswordChange(auth_views.PasswordChangeView):
    def form_valid(self, form: Any) -> HttpResponse:
        response = super().form_valid(form)  # update_session_auth_hash: this session stays
        end_other_sessions(form.user, keep=self.request.session.session_key)
        return response


class PasswordResetConfirm(auth_views.PasswordResetConfirmView):
    def form_valid(self, form: Any) -> HttpResponse:
        response = super().form_valid(form)
        if self.request.user.pk == form.user.pk:
            logout(self.request)  # the browser that used the link was signed in as them
        # Every session of theirs ends; the link's own (anonymous) session is not theirs.
        end_other_sessions(form.user, keep=self.request.session.session_key)
        return response


# Anyone may ask for a reset link for any address; without a limit the form would mail an
# inbox as often as someone presses the button. Counted in the cache (per process unless a
# shared cache is configured: a soft limit, enough against a flood from one form).
RESETS_PER_ADDRESS = 3
RESET_WINDOW = 3600  # seconds


def _may_send_to(email: str) -> bool:
    digest = hashlib.sha256(email.strip().lower().encode()).hexdigest()
    key = f"mrtrweb:password-reset:{digest}"
    cache.add(key, 0, RESET_WINDOW)
    try:
        sent = cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.set(key, 1, RESET_WINDOW)
        sent = 1
    return sent <= RESETS_PER_ADDRESS
