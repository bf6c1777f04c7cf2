"""What operators set per connection and per tool, and what people delegate."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.contrib.auth.models import Group
from django.core.validators import MinValueValidator
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from mrtrweb.servers.models import Connection

__all__ = ["Delegation", "Policy", "SplitDecline"]


class SplitDecline(models.TextChoices):
    # What a declined part of a split round does to the round.
    DECLINE_ROUND = "decline-round", _("decline the whole round at once")
    SEND_WITH_OTHERS = "send-with-others", _("send it declined once every part is answered")


class Policy(models.Model):
    """One connection's policy (``tool_name`` empty) or one tool's, which overrides it field by
    field where set (see :mod:`.resolve`). Fields left at their "off" value change nothing."""

    connection = models.ForeignKey(Connection, on_delete=models.CASCADE, related_name="policies")
    tool_name = models.CharField(max_length=2000, blank=True, default="")

    # Rounds that outlive the server's state: re-issue the call when a round's state expires
    # unanswered. Offered for tools hinted read-only or idempotent, else only if allowed.
    renew_expired = models.BooleanField(default=False)
    renew_unsafe = models.BooleanField(
        default=False,
        help_text=_("Renew although the tool is not marked read-only or idempotent."),
    )
    renew_for = models.DurationField(default=timedelta(days=7))

    # Quorum: N approvals from a group; 1 means one person's answer is enough (no quorum).
    approvals_required = models.PositiveSmallIntegerField(
        default=1, validators=[MinValueValidator(1)]
    )
    approvers_group = models.ForeignKey(
        Group, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    rejections_to_decline = models.PositiveSmallIntegerField(
        default=1, validators=[MinValueValidator(1)]
    )
    allow_self_approval = models.BooleanField(default=False)

    # Split rounds: {"<inputRequests key>": {"user": "<username>"} | {"group": "<name>"}}.
    split_routes = models.JSONField(default=dict, blank=True)
    split_decline = models.CharField(
        max_length=32, choices=SplitDecline.choices, default=SplitDecline.DECLINE_ROUND
    )

    # Reminders: fractions of the answering time elapsed, e.g. [0.5, 0.9].
    reminders = models.JSONField(default=list, blank=True)
    escalate_after = models.DurationField(null=True, blank=True)
    escalate_user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    escalate_group = models.ForeignKey(
        Group, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["connection", "tool_name"], name="policy_one_per_connection_tool"
            )
        ]

    def __str__(self) -> str:
        return f"{self.connection.name}: {self.tool_name or '(every tool)'}"


class Delegation(models.Model):
    """``person`` hands their rounds to ``delegate`` from ``starts_at`` until ``until``."""

    person = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="delegations"
    )
    delegate = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="delegated_to_me"
    )
    starts_at = models.DateTimeField(default=timezone.now)
    until = models.DateTimeField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["person", "until"], name="delegation_person_until")]

    def __str__(self) -> str:
        return f"{self.person} → {self.delegate} until {self.until:%Y-%m-%d}"
