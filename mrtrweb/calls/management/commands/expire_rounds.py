"""``manage.py expire_rounds``: run the rounds' safety-net sweep once (cron, or by hand).

Every parked round already has its own expiry task, due when its state lifetime ends; this
catches what those tasks could not (a queue that was down, a task lost with a killed worker):
open rounds past their lifetime are expired and their assignees emailed, answered rounds whose
delivery task was lost are queued again, deliveries whose sender died are flagged, and calls
whose first request was left running by a sender that died are failed.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from mrtrweb.calls import engine


class Command(BaseCommand):
    help = (
        "Expire rounds past their state lifetime, recover stranded deliveries and fail calls "
        "left running."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        counts = engine.sweep()
        self.stdout.write(
            f"expired {counts['expired']}, requeued {counts['requeued']}, "
            f"flagged {counts['flagged']}, failed {counts['failed']}"
        )
