"""``manage.py expire_rounds``: one tick of the scheduler's calls part (cron, or by hand).

Every worker already runs the scheduler (mrtrweb.scheduler); this does the same once, where
none runs: open rounds past their lifetime expired (or renewed) and their assignees emailed,
reminders and escalations due sent, answers and calls nobody sent queued, deliveries whose
sender died flagged, and calls left running by a sender that died failed.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from mrtrweb.calls import engine


class Command(BaseCommand):
    help = (
        "Expire rounds past their state lifetime, recover stranded deliveries and fail calls "
        "left running (one tick of the scheduler's calls part)."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        counts = engine.run_due()
        self.stdout.write(
            f"expired {counts['expired']}, requeued {counts['requeued']}, "
            f"flagged {counts['flagged']}, failed {counts['failed']}"
        )
