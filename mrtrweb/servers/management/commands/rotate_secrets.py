"""Re-encrypt every stored secret under the newest key in FERNET_KEYS."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand
from django.db import transaction

from mrtrweb.calls.models import Round
from mrtrweb.servers.models import Connection


class Command(BaseCommand):
    help = (
        "Re-encrypt connection secrets and parked requestStates under the first key of "
        "MRTRWEB_FERNET_KEYS, so older keys can then be removed."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        # Reading decrypts under any listed key; saving encrypts under the first one.
        with transaction.atomic():
            connections = 0
            for conn in Connection.objects.select_for_update().only(
                "pk", "bearer_token", "headers"
            ):
                conn.save(update_fields=["bearer_token", "headers"])
                connections += 1
            rounds = 0
            for round in (
                Round.objects.select_for_update()
                .filter(request_state__isnull=False)
                .only("pk", "request_state")
            ):
                round.save(update_fields=["request_state"])
                rounds += 1
        self.stdout.write(f"Re-encrypted {connections} connection(s) and {rounds} round state(s).")
