"""Webhook subscriptions (a program asked to hear about a call) and their deliveries."""

from __future__ import annotations

import json
import uuid
from typing import Any

from django.db import models
from django.utils import timezone

from mrtrweb.api.models import ApiToken
from mrtrweb.calls.models import Call, Round


class Subscription(models.Model):
    """POST events of ``call`` to ``url``, signed with ``token``'s webhook secret.

    A revoked token (or a deactivated user) keeps its subscriptions for the record, but
    nothing more is sent: new events create no delivery and pending retries are cancelled.
    A deleted token leaves ``token`` empty, with the same effect: without the secret there
    is nothing to sign with.
    """

    call = models.ForeignKey(Call, on_delete=models.CASCADE, related_name="webhooks")
    url = models.URLField(max_length=2000)
    token = models.ForeignKey(
        ApiToken, null=True, on_delete=models.SET_NULL, related_name="webhook_subscriptions"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["call_id", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["call", "token", "url"], name="webhook_subscription_unique"
            )
        ]

    def __str__(self) -> str:
        return f"webhook of call {self.call_id} to {self.url}"

    @property
    def can_send(self) -> bool:
        token = self.token
        return token is not None and token.revoked_at is None and token.user.is_active


class Delivery(models.Model):
    """One event for one subscription, and every attempt to deliver it."""

    class Type(models.TextChoices):
        ROUND_PENDING = "round.pending", "round.pending"
        CALL_FINISHED = "call.finished", "call.finished"

    class Status(models.TextChoices):
        PENDING = "pending", "pending"
        DELIVERED = "delivered", "delivered"
        FAILED = "failed", "failed (gave up)"
        CANCELLED = "cancelled", "cancelled"

    # Sent as X-Mrtr-Delivery and as the payload's "id": the same on every retry, so a
    # receiver can drop duplicates.
    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    subscription = models.ForeignKey(
        Subscription, on_delete=models.CASCADE, related_name="deliveries"
    )
    call = models.ForeignKey(Call, on_delete=models.CASCADE, related_name="webhook_deliveries")
    round = models.ForeignKey(
        Round, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    event = models.CharField(max_length=32, choices=Type.choices)
    # One delivery per event per subscription ("round.pending:<round id>", "call.finished"),
    # however many times the engine's signal or a late subscription brings it up.
    dedupe_key = models.CharField(max_length=64)
    # The JSON text POSTed, kept byte for byte so every retry sends the very same body.
    body = models.TextField()
    status = models.CharField(
        max_length=16, choices=Status.choices, default=Status.PENDING, db_index=True
    )
    attempts = models.PositiveSmallIntegerField(default=0)
    # One entry per attempt: {"attempt", "at", "status_code", "error", "duration_ms"}.
    history = models.JSONField(default=list, blank=True)
    last_status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    # When a pending delivery is due (the scheduler queues it then, webhooks.due): a moment
    # after it was created, a retry's backoff, or an attempt's end while one is in flight.
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "deliveries"
        constraints = [
            models.UniqueConstraint(
                fields=["subscription", "dedupe_key"], name="webhook_delivery_once"
            )
        ]
        indexes = [
            # What the scheduler looks up every second: the pending deliveries' due times.
            models.Index(
                fields=["next_attempt_at"],
                name="webhook_delivery_due",
                condition=models.Q(status="pending"),
            )
        ]

    def __str__(self) -> str:
        return f"{self.event} of call {self.call_id} ({self.status})"

    @property
    def payload(self) -> Any:
        return json.loads(self.body)
