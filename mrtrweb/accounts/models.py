"""Who a person is at the organisation's identity provider, and the provider's second factor.

- :class:`OidcIdentity`: the provider's ``iss`` and ``sub`` (the stable identifier OpenID
  Connect guarantees), bound to one local user. Email addresses change and can be re-issued, so
  they never pick the account.
- :class:`SingleSignOnDevice`: a django-otp device that takes no codes. It stands for "the
  provider checked a second factor at this sign-in" (its ID token's ``amr`` said so), so such a
  session counts as verified (``user.is_verified()``) without a code here.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django_otp.models import Device


class OidcIdentity(models.Model):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="oidc_identities"
    )
    issuer = models.CharField(max_length=255)
    subject = models.CharField(max_length=255)
    created_at = models.DateTimeField(auto_now_add=True)
    last_sign_in_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "single sign-on identity"
        verbose_name_plural = "single sign-on identities"
        constraints = [
            models.UniqueConstraint(fields=["issuer", "subject"], name="oidc_identity_unique")
        ]

    def __str__(self) -> str:
        return f"{self.subject} at {self.issuer}"


class SingleSignOnDevice(Device):
    """Confirmed when made; never accepts a code."""

    class Meta(Device.Meta):
        verbose_name = "single sign-on second factor"

    def verify_token(self, token: str) -> bool:
        return False


class Preferences(models.Model):
    """How a person wants the site shown to them. One row per person, made when first saved."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="preferences"
    )
    # An IANA zone name ("Europe/Oslo"); "" follows the browser (else UTC). Checked against
    # zoneinfo when saved and again when used, so a zone a later tzdata drops falls back.
    time_zone = models.CharField(max_length=64, blank=True, default="")
    # A code of settings.LANGUAGES ("de"); "" follows the browser (else English). Pages and the
    # emails sent to this person are in it (accounts/languages.py).
    language = models.CharField(max_length=16, blank=True, default="")

    class Meta:
        verbose_name = "preferences"
        verbose_name_plural = "preferences"

    def __str__(self) -> str:
        return f"preferences of user {self.user_id}"
