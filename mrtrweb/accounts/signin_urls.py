"""/accounts/: signing in and resetting a password with our forms and templates
(mrtrweb/accounts/signin.py). Mounted before ``django.contrib.auth.urls``, whose names these
keep (``login``, ``password_reset``, ...), so the rest of Django's (sign-out, the reset's
later steps) still apply."""

from django.urls import path

from .signin import PasswordChange, PasswordReset, PasswordResetConfirm, SignIn

urlpatterns = [
    path("login/", SignIn.as_view(), name="login"),
    path("password_reset/", PasswordReset.as_view(), name="password_reset"),
    path("password_change/", PasswordChange.as_view(), name="password_change"),
    path("reset/<uidb64>/<token>/", PasswordResetConfirm.as_view(), name="password_reset_confirm"),
]
