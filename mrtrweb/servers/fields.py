"""Model fields whose values are encrypted at rest."""

from __future__ import annotations

import json
from typing import Any

from django.db import models

from .crypto import decrypt, encrypt


class EncryptedTextField(models.TextField):
    """A text value stored as a Fernet token. ``None`` stays ``NULL`` (and "" stays "")."""

    description = "Text encrypted at rest"

    def from_db_value(self, value: str | None, expression: Any, connection: Any) -> str | None:
        if value is None or value == "":
            return value
        return decrypt(value)

    def get_prep_value(self, value: Any) -> str | None:
        value = super().get_prep_value(value)
        if value is None or value == "":
            return value
        return encrypt(value)


class EncryptedJSONField(models.TextField):
    """A JSON value stored as one Fernet token (headers may carry API keys)."""

    description = "JSON encrypted at rest"

    def from_db_value(self, value: str | None, expression: Any, connection: Any) -> Any:
        if value is None or value == "":
            return None
        return json.loads(decrypt(value))

    def to_python(self, value: Any) -> Any:
        if isinstance(value, str):
            try:
                return json.loads(value)
            except ValueError:
                return value
        return value

    def get_prep_value(self, value: Any) -> str | None:
        if value is None:
            return None
        return encrypt(json.dumps(value, sort_keys=True))
