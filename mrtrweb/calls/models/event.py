"""``Event``: the audit trail of a call, one row per transition (written by
``calls.engine.trail``, read by ``calls.presenting.history``). Re-exported from
``calls.models``, which is where callers import it from; it names ``Call`` and ``Round`` by
their labels, so this module never imports ``calls_and_rounds`` back."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from .bases import where_set
from .fields import TextJSONField


class Event(models.Model):
    """The audit trail of a call: append-only, one row per transition."""

    call = models.ForeignKey("calls.Call", on_delete=models.CASCADE, related_name="events")
    # Indexed where set (event_round_set): a call's own events have none.
    round = models.ForeignKey(
        "calls.Round",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="events",
        db_index=False,
    )
    kind = models.CharField(max_length=32)
    # Never looked up by: not indexed (deleting a user who acted scans the events once).
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        db_index=False,
    )
    detail = TextJSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [
            where_set("round", "event_round_set"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} on call {self.call_id}"
