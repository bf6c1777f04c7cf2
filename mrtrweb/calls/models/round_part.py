"""``RoundPart``: a split round's parts (``calls.engine.splitting`` makes and
answers them). Re-exported from ``calls.models``, which is where callers import it from; it
names ``Round`` by its label, so this module never imports ``calls_and_rounds`` back."""

from __future__ import annotations

from django.db import models

from .bases import assignment, where_set
from .fields import CompactJSONField


# mypy takes a base made by a call as Any: the shared fields are untyped on RoundPart.
class RoundPart(assignment("parts")):  # type: ignore[misc]
    """A part of a split round: the keys of its ``inputRequests`` that a split
    policy routes to one person or group, who sees and answers only these. The keys no route
    names form one more part, routed as the round itself is. The round is resubmitted once,
    when every part is answered (``calls.engine.splitting``)."""

    class Status(models.TextChoices):
        PENDING = "pending", "waiting for an answer"
        ANSWERED = "answered", "answered"
        DECLINED = "declined", "declined"
        # Another part declined the whole round: this one is no longer asked.
        CLOSED = "closed", "closed"

    ANSWERED_STATUSES = (Status.ANSWERED, Status.DECLINED)

    round = models.ForeignKey("calls.Round", on_delete=models.CASCADE, related_name="parts")
    # The inputRequests keys of this part, in the server's order (one for a routed key,
    # several for the remaining part).
    keys = models.JSONField(default=list)
    # The route's key ("" for the remaining part), what lists call the part by.
    key = models.TextField(blank=True, default="")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    # inputResponses for this part's keys: {key: {"action": ..., "content": {...}}}.
    answers = CompactJSONField(null=True, blank=True)
    answered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["round_id", "id"]
        indexes = [
            models.Index(fields=["assigned_user", "status"], name="part_assignee_status"),
            models.Index(fields=["assigned_group", "status"], name="part_group_status"),
            where_set("answered_by", "part_answerer_set"),
        ]

    def __str__(self) -> str:
        return f"part {self.key or '(rest)'} of round {self.round_id}"

    @property
    def is_pending(self) -> bool:
        return self.status == self.Status.PENDING
