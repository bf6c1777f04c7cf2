"""Django's SQLite cursor, with each statement's placeholders converted once.

Django writes ``%s`` placeholders and its SQLite cursor rewrites them to ``?`` with a regular
expression on every statement it runs. The app sends the same few statements over and over
(the ORM writes the same string for the same lookup), and a round's read with its call,
connection and people is some 140 columns long: the rewriting was about a
fortieth of a person's whole flow (docs/performance.md). Here each statement's rewriting is
kept (the last :data:`KEPT` of them, none longer than :data:`LONGEST` characters, so a few MB
at most).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from django.db.backends.sqlite3 import base

__all__ = ["KEPT", "LONGEST", "SQLiteCursorWrapper"]

KEPT = 512
LONGEST = 16_384


class SQLiteCursorWrapper(base.SQLiteCursorWrapper):
    def convert_query(self, query: str, *, param_names: Any = None) -> str:
        if param_names is None and len(query) <= LONGEST:
            return _to_qmark(query)
        return super().convert_query(query, param_names=param_names)


@lru_cache(maxsize=KEPT)
def _to_qmark(query: str) -> str:
    return base.FORMAT_QMARK_REGEX.sub("?", query).replace("%%", "%")
