"""API tokens: what a program presents as ``Authorization: Bearer``.

Only a SHA-256 digest of a token is stored; the token itself is shown once, when issued.
Each token also carries the secret its webhooks are signed with (encrypted at rest).
"""

from __future__ import annotations

import hashlib
import secrets

from django.conf import settings
from django.contrib.auth.models import User
from django.db import models
from django.utils import timezone

from mrtrweb.encryption.fields import EncryptedTextField
from mrtrweb.webhooks.signing import standard_secret

# Tokens look like "mrtr_<prefix>_<secret>": the prefix is stored in the clear so people can
# tell their tokens apart in lists and logs without the secret part ever being kept.
TOKEN_PREFIX = "mrtr_"


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class ApiTokenQuerySet(models.QuerySet["ApiToken"]):
    def active(self) -> ApiTokenQuerySet:
        return self.filter(revoked_at__isnull=True, user__is_active=True)


class ApiToken(models.Model):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16, db_index=True)
    token_hash = models.CharField(max_length=64, unique=True)
    webhook_secret = EncryptedTextField()
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = ApiTokenQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = "API token"

    def __str__(self) -> str:
        return f"{self.name} ({TOKEN_PREFIX}{self.prefix}_…)"

    @classmethod
    def issue(cls, user: User, name: str) -> tuple[ApiToken, str]:
        """A new token for ``user`` and its plain text, which is never available again."""
        prefix = secrets.token_hex(4)
        plain = f"{TOKEN_PREFIX}{prefix}_{secrets.token_urlsafe(32)}"
        token = cls.objects.create(
            user=user,
            name=name,
            prefix=prefix,
            token_hash=digest(plain),
            webhook_secret=secrets.token_urlsafe(32),
        )
        return token, plain

    @classmethod
    def authenticate(cls, plain: str) -> ApiToken | None:
        """The active token whose text this is, or ``None``."""
        if not plain.startswith(TOKEN_PREFIX):
            return None
        return cls.objects.active().select_related("user").filter(token_hash=digest(plain)).first()

    @property
    def standard_webhook_secret(self) -> str:
        """The webhook secret as Standard Webhooks libraries take it: ``whsec_`` and the same
        key in base64, so tokens issued before keep their secret."""
        return standard_secret(self.webhook_secret)

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None

    def revoke(self) -> None:
        if self.revoked_at is None:
            self.revoked_at = timezone.now()
            self.save(update_fields=["revoked_at"])


class IdempotencyKey(models.Model):
    """The ``Idempotency-Key`` of a ``POST /api/v1/calls`` and the call that request started
    (:mod:`mrtrweb.api.idempotency`).

    Written in the same transaction as the call, so a key never names a call that does not
    exist, and the unique constraint lets exactly one of several concurrent requests with
    the same key start its call. Honoured for ``idempotency.TTL`` (24 hours); older rows are
    ignored and ``manage.py prune_idempotency_keys`` deletes them.
    """

    token = models.ForeignKey(ApiToken, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=255)
    # SHA-256 (hex) of the request body, as canonical JSON: a retry must send the same request.
    fingerprint = models.CharField(max_length=64)
    call = models.ForeignKey("calls.Call", on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["token", "key"], name="api_idempotency_key_once")
        ]

    def __str__(self) -> str:
        return f"Idempotency-Key {self.key!r} of call {self.call_id}"
