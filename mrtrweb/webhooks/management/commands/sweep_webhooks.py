"""``manage.py sweep_webhooks``: one tick of the scheduler's webhooks part (cron, or by hand):
queue the pending webhook deliveries that are due (a retry, or one whose task was lost)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from mrtrweb.webhooks.due import send_due


class Command(BaseCommand):
    help = (
        "Queue the pending webhook deliveries that are due (a retry, a task lost with a queue "
        "that was down or a worker killed mid-attempt). Every worker does it already."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        self.stdout.write(f"requeued {send_due()}")
