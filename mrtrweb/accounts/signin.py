"""Signing in with a password, and setting a new one by email.

Django's own views (``django.contrib.auth.views``) with our forms and templates
(templates/registration/). Two things differ from Django's defaults:

- the sign-in form's errors say plainly what went wrong;
- the reset link in the email is built on ``settings.MRTRWEB_BASE_URL`` (the site's public
  address), never on the ``Host`` header of the request that asked for it: a forged header
  must not be able to send a person's reset link to someone else's site.

Django's reset form already reveals nothing about unknown addresses (the same "check your
email" page follows, and no email is sent), sends nothing to inactive people or to those who
sign in only through single sign-on (no usable password), and its link works once: the token
is bound to the password hash, which the reset changes.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import AuthenticationForm
from django.http import HttpResponse

RESET_EMAIL = "registration/password_reset_email.txt"
RESET_SUBJECT = "registration/password_reset_subject.txt"


class SignInForm(AuthenticationForm):
    error_messages = {
        **AuthenticationForm.error_messages,
        "invalid_login": (
            "That username and password do not match an account here. Both are case-sensitive."
        ),
        "inactive": "This account is switched off. An administrator of this site can switch it on.",
    }


class SignIn(auth_views.LoginView):
    authentication_form = SignInForm
    redirect_authenticated_user = False


def base_url() -> str:
    return settings.MRTRWEB_BASE_URL.rstrip("/")


class PasswordReset(auth_views.PasswordResetView):
    email_template_name = RESET_EMAIL
    subject_template_name = RESET_SUBJECT

    def form_valid(self, form: Any) -> HttpResponse:
        # Read at each request, so a changed setting (and a test's) applies.
        self.extra_email_context = {"base_url": base_url()}
        return super().form_valid(form)
