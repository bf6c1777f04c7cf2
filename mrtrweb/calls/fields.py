"""Model fields of calls and rounds."""

from __future__ import annotations

import json
from typing import Any

from django.db import models


class CompactJSONField(models.JSONField):
    """A JSONField written without the spaces ``json.dumps`` puts after "," and ":" where the
    database keeps JSON as text (SQLite): a few bytes a key. PostgreSQL's jsonb keeps no
    spaces anyway. Reading is unchanged."""

    def get_db_prep_save(self, value: Any, connection: Any) -> Any:
        if connection.vendor != "sqlite" or value is None or hasattr(value, "resolve_expression"):
            return super().get_db_prep_save(value, connection)
        return json.dumps(self.get_prep_value(value), cls=self.encoder, separators=(",", ":"))
