"""``Vote``: the approvers' verdicts on a quorum round's proposal (``calls.engine.quorum``).
Re-exported from ``calls.models``, which is where callers import it from; it names ``Round`` by
its label, so this module never imports ``calls_and_rounds`` back."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class Vote(models.Model):
    """One approver's verdict on a quorum round's proposal (engine.quorum): one per person
    and round, whatever races; the proposer's own approval is one too."""

    class Verdict(models.TextChoices):
        APPROVE = "approve", "approved"
        REJECT = "reject", "rejected"

    round = models.ForeignKey("calls.Round", on_delete=models.CASCADE, related_name="votes")
    voter = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+", db_index=False
    )
    # Whose vote it is when the voter cast it as their stand-in (routing.answering_for): one
    # vote each, whether the person cast it or someone standing in for them did. Null: the
    # voter's own.
    for_user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="+",
        null=True,
        blank=True,
        db_index=False,
    )
    verdict = models.CharField(max_length=8, choices=Verdict.choices)
    # A note for the requester; kept here and in the audit trail, never sent to the server.
    comment = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["round_id", "created_at", "id"]
        constraints = [
            # Nobody votes twice on one round, even when two of their posts race.
            models.UniqueConstraint(fields=["round", "voter"], name="vote_once_per_round")
        ]

    def __str__(self) -> str:
        return f"{self.verdict} by {self.voter_id} on round {self.round_id}"

    @property
    def cast_for_id(self) -> int:
        """Whose vote this is: the person stood in for, else the voter."""
        return self.for_user_id if self.for_user_id is not None else self.voter_id
