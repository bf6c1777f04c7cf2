"""Re-encrypt every stored secret under the newest key in FERNET_KEYS."""

from __future__ import annotations

from functools import reduce
from operator import or_
from typing import Any

from django.apps import apps
from django.core.management.base import BaseCommand
from django.db import models, transaction

from mrtrweb.encryption.fields import (
    EncryptedCompactTextField,
    EncryptedJSONField,
    EncryptedTextField,
)

ENCRYPTED_FIELDS = (EncryptedTextField, EncryptedJSONField, EncryptedCompactTextField)


def encrypted_fields(model: type[models.Model]) -> list[str]:
    """The names of ``model``'s fields whose values are encrypted at rest."""
    return [
        field.attname
        for field in model._meta.concrete_fields
        if isinstance(field, ENCRYPTED_FIELDS)
    ]


class Command(BaseCommand):
    help = (
        "Re-encrypt every encrypted field of every model (connection secrets, call "
        "credentials, parked requestStates, webhook secrets, ...) under the first key of "
        "MRTRWEB_FERNET_KEYS, so older keys can then be removed."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        # The app registry, not a list of models: a new encrypted field is rotated too, and
        # this package stays below every app that stores a secret.
        counts: list[str] = []
        with transaction.atomic():
            for model in apps.get_models():
                names = encrypted_fields(model)
                if not names:
                    continue
                # Rows where every encrypted field is NULL hold nothing to rotate.
                holding = reduce(or_, (models.Q(**{f"{name}__isnull": False}) for name in names))
                rows = model._base_manager.select_for_update().filter(holding).only("pk", *names)
                count = 0
                for row in rows:
                    # Reading decrypts under any listed key; writing encrypts under the first.
                    # An update, not save(): no signals, no save() of the model's own.
                    model._base_manager.filter(pk=row.pk).update(
                        **{name: getattr(row, name) for name in names}
                    )
                    count += 1
                counts.append(f"{count} {model._meta.label}")
        self.stdout.write("Re-encrypted: " + ", ".join(counts) + ".")
