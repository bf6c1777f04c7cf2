"""The embedded default's cursors (mrtrweb/db/sqlite3/cursors.py): each statement's
placeholders converted once, and every statement still sent as Django's cursor sends it."""

from __future__ import annotations

import pytest
from django.db import connection

from mrtrweb.db.sqlite3 import cursors

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "sqlite", reason="the SQLite backend's own"),
]


def test_a_statement_is_converted_once_and_answers_the_same() -> None:
    sql = "SELECT %s, '100%%', %s || 'x'"
    before = cursors._to_qmark.cache_info()
    with connection.cursor() as cursor:
        for value in ("a", "b", "c"):
            cursor.execute(sql, [value, value])
            assert cursor.fetchone() == (value, "100%", f"{value}x")
    after = cursors._to_qmark.cache_info()
    assert after.misses == before.misses + 1  # converted the first time only
    assert after.hits >= before.hits + 2
    assert after.maxsize == cursors.KEPT


def test_named_parameters_and_long_statements_are_djangos() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT %(a)s + %(b)s", {"a": 2, "b": 3})
        assert cursor.fetchone() == (5,)
        # Longer than what is kept: converted each time, never kept.
        long = "SELECT %s" + " " * cursors.LONGEST
        before = cursors._to_qmark.cache_info().currsize
        cursor.execute(long, [7])
        assert cursor.fetchone() == (7,)
        assert cursors._to_qmark.cache_info().currsize == before
        # A statement without parameters is not converted at all ("%" stays as written).
        cursor.execute("SELECT '5%'")
        assert cursor.fetchone() == ("5%",)
