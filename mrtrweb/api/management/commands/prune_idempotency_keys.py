"""``manage.py prune_idempotency_keys``: delete the API's Idempotency-Keys older than 24 hours."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from mrtrweb.api.idempotency import prune


class Command(BaseCommand):
    help = (
        "Delete the Idempotency-Keys of POST /api/v1/calls that are no longer honoured (older "
        "than 24 hours). Expired keys are ignored anyway; run it daily so they do not pile up."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        self.stdout.write(f"deleted {prune()}")
