"""Model fields of calls and rounds."""

from __future__ import annotations

import json
from functools import partial
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


class TextJSONField(CompactJSONField):
    """JSON nothing looks inside, kept as the text it was written as: PostgreSQL's ``json``
    rather than ``jsonb``, which parses each value into a binary tree with an offset per key
    (a round's 208-byte question took 278 bytes). Only for columns read whole: on PostgreSQL
    ``json`` has no key lookups by index and no equality (``field=...`` fails), and nothing
    filters on these. The key order is the writer's (jsonb sorts keys). SQLite keeps JSON as
    text anyway: unchanged there."""

    def db_type(self, connection: Any) -> str | None:
        if connection.vendor == "postgresql":
            return "json"
        return super().db_type(connection)

    def get_db_prep_value(self, value: Any, connection: Any, prepared: bool = False) -> Any:
        if connection.vendor != "postgresql":
            return super().get_db_prep_value(value, connection, prepared)
        from psycopg.types.json import Json

        if not prepared:
            value = self.get_prep_value(value)
        return Json(value, dumps=partial(_json_text, encoder=self.encoder))

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        if connection.vendor == "postgresql":
            # psycopg parses json itself (Django has it hand over only jsonb as text).
            return value
        return super().from_db_value(value, expression, connection)


def _json_text(value: Any, encoder: type[json.JSONEncoder] | None = None) -> str:
    """``value`` as the text a ``json`` column keeps as is: compact, and UTF-8 rather than
    ``\\u`` escapes (six bytes a letter); escaped only if it holds text UTF-8 cannot carry
    (a lone surrogate), which PostgreSQL then refuses or keeps as JSON allows."""
    text = json.dumps(value, cls=encoder, separators=(",", ":"), ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, cls=encoder, separators=(",", ":"))
    return text
