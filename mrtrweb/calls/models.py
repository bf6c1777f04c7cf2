"""Calls to MCP servers and their input-required rounds.

Only :mod:`mrtrweb.calls.engine` changes a call's or a round's status; every
transition there is a guarded ``UPDATE ... WHERE status = <expected>``.
"""

from __future__ import annotations

import hashlib
from typing import Any

from django.conf import settings
from django.contrib.auth.models import Group
from django.db import models
from django.urls import reverse
from django.utils import timezone

from mrtrweb.servers.fields import EncryptedJSONField, EncryptedTextField
from mrtrweb.servers.models import Connection


class Call(models.Model):
    class Method(models.TextChoices):
        TOOL = "tools/call", "tool"
        PROMPT = "prompts/get", "prompt"
        RESOURCE = "resources/read", "resource"

    class Status(models.TextChoices):
        RUNNING = "running", "running"
        WAITING = "waiting", "waiting for input"
        COMPLETED = "completed", "completed"
        FAILED = "failed", "failed"
        CANCELLED = "cancelled", "cancelled"
        EXPIRED = "expired", "expired"

    FINISHED = (Status.COMPLETED, Status.FAILED, Status.CANCELLED, Status.EXPIRED)

    connection = models.ForeignKey(Connection, on_delete=models.PROTECT, related_name="calls")
    method = models.CharField(max_length=32, choices=Method.choices)
    # The tool or prompt name, or the resource URI.
    target = models.CharField(max_length=2000)
    # The arguments exactly as first sent: servers bind requestState to a digest of them.
    arguments_json = models.TextField(default="{}")
    # The connection's token and headers when the call started: servers bind requestState to
    # the caller's identity, so every round is resubmitted with these, whoever answers it.
    credentials = EncryptedJSONField(null=True, blank=True)
    # The tool as listed when the call started, so any worker can mirror x-mcp-header.
    tool = models.JSONField(null=True, blank=True)
    started_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="calls"
    )
    status = models.CharField(
        max_length=16, choices=Status.choices, default=Status.RUNNING, db_index=True
    )
    # Input-required results received so far (state-only ones included), against the cap.
    rounds_used = models.PositiveSmallIntegerField(default=0)
    result = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    # Who the program that started the call asked for (the JSON API's "assignee" or "group");
    # when set, it wins over the tool's and the connection's routing policy.
    route_user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    route_group = models.ForeignKey(
        Group, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    restarted_from = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="restarts"
    )
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["status", "-created_at"], name="call_status_created"),
            models.Index(fields=["started_by", "-created_at"], name="call_starter_created"),
        ]

    def __str__(self) -> str:
        return f"{self.get_method_display()} {self.target} on {self.connection.name}"

    def get_absolute_url(self) -> str:
        return reverse("calls:call", kwargs={"pk": self.pk})

    @property
    def is_finished(self) -> bool:
        return self.status in self.FINISHED


class Round(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending", "waiting for an answer"
        SUBMITTED = "submitted", "answered, waiting to be sent"
        DELIVERING = "delivering", "being sent"
        DELIVERED = "delivered", "delivered"
        FAILED = "failed", "could not be delivered"
        # Sent, but no usable answer came back: the server may have acted on it, so it is not
        # resent blindly; an admin chooses to resend or abandon it.
        UNKNOWN = "unknown", "sent, outcome unknown: waiting for an admin"
        EXPIRED = "expired", "expired"
        CANCELLED = "cancelled", "cancelled"

    call = models.ForeignKey(Call, on_delete=models.CASCADE, related_name="rounds")
    index = models.PositiveSmallIntegerField()
    # The inputRequests exactly as received (keys are arbitrary server strings).
    input_requests = models.JSONField(default=dict)
    # Their messages as plain text, filled when parked: what the admins' search looks in
    # (JSON text escapes non-ASCII and quotes on some databases, and cannot be indexed).
    summary = models.TextField(blank=True, default="")
    # requestState is opaque, echoed byte for byte, and never shown to a browser.
    has_request_state = models.BooleanField(default=False)
    request_state = EncryptedTextField(null=True, blank=True)
    request_state_sha256 = models.CharField(max_length=64, blank=True)
    # Set when a request in this round is of a kind or shape the client cannot answer.
    unsupported_reason = models.TextField(blank=True)
    status = models.CharField(
        max_length=16, choices=Status.choices, default=Status.PENDING, db_index=True
    )
    # inputResponses as sent: {key: {"action": ..., "content": {...}}}.
    answers = models.JSONField(null=True, blank=True)
    answered_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="answered_rounds",
    )
    answered_at = models.DateTimeField(null=True, blank=True)
    # Who is asked (see calls.routing): one user, or a group whose members claim the round.
    assigned_user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="assigned_rounds",
    )
    assigned_group = models.ForeignKey(
        Group, null=True, blank=True, on_delete=models.SET_NULL, related_name="assigned_rounds"
    )
    claimed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="claimed_rounds",
    )
    claimed_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    delivery_error = models.TextField(blank=True)
    # Delivery attempts so far (each one claimed submitted -> delivering), when the next
    # automatic one is due, when the current one started, and the last HTTP status seen.
    attempts = models.PositiveSmallIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    delivering_since = models.DateTimeField(null=True, blank=True)
    # When the server last showed it is still working on the current attempt (a progress
    # notification): the watchdog counts its deadline from here, so a long call that keeps
    # reporting progress is not taken for a dead one.
    heard_at = models.DateTimeField(null=True, blank=True)
    last_http_status = models.PositiveSmallIntegerField(null=True, blank=True)
    # When the outcome of a delivery became unknown, and whether the one automatic resend an
    # idempotent tool is allowed was already spent.
    flagged_at = models.DateTimeField(null=True, blank=True)
    auto_resent = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["call_id", "index"]
        permissions = [("manage_rounds", "Can see and manage every call and round")]
        indexes = [
            models.Index(fields=["status", "-created_at"], name="round_status_created"),
            models.Index(fields=["assigned_user", "status"], name="round_assignee_status"),
            models.Index(fields=["assigned_group", "status"], name="round_group_status"),
            models.Index(fields=["status", "expires_at"], name="round_status_deadline"),
        ]
        constraints = [
            models.UniqueConstraint(fields=["call", "index"], name="round_index_unique_per_call")
        ]

    def __str__(self) -> str:
        return f"round {self.index} of call {self.call_id}"

    def get_absolute_url(self) -> str:
        return reverse("calls:round", kwargs={"pk": self.pk})

    @property
    def is_pending(self) -> bool:
        return self.status == self.Status.PENDING

    @property
    def is_flagged(self) -> bool:
        """Sent with an unknown outcome: the answers are safe, an admin decides what next."""
        return self.status == self.Status.UNKNOWN

    def set_request_state(self, state: str | None) -> None:
        self.has_request_state = state is not None
        self.request_state = state
        self.request_state_sha256 = (
            hashlib.sha256(state.encode("utf-8")).hexdigest() if state is not None else ""
        )

    @staticmethod
    def summary_of(requests: Any) -> str:
        """The messages of ``requests`` (inputRequests), one a line, for search."""
        lines = []
        for request in (requests or {}).values() if isinstance(requests, dict) else ():
            params = request.get("params") if isinstance(request, dict) else None
            message = params.get("message") if isinstance(params, dict) else None
            if isinstance(message, str) and message.strip():
                lines.append(message.strip())
        return "\n".join(lines)

    def requests(self) -> list[tuple[str, dict[str, Any]]]:
        """The input requests in the order the server sent them."""
        return list(self.input_requests.items())


class Event(models.Model):
    """The audit trail of a call: append-only, one row per transition."""

    call = models.ForeignKey(Call, on_delete=models.CASCADE, related_name="events")
    round = models.ForeignKey(
        Round, null=True, blank=True, on_delete=models.CASCADE, related_name="events"
    )
    kind = models.CharField(max_length=32)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    detail = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"{self.kind} on call {self.call_id}"
