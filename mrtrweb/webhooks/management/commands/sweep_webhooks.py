"""``manage.py sweep_webhooks``: queue again the webhook deliveries whose task was lost."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from mrtrweb.webhooks.tasks import sweep


class Command(BaseCommand):
    help = (
        "Queue again pending webhook deliveries whose task was lost (a queue that was down, "
        "a worker killed mid-attempt). Safe to run often; run it from cron beside expire_rounds."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        self.stdout.write(f"requeued {sweep()}")
