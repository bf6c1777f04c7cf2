"""The embedded default's SQLite connections are kept for the next thread (mrtrweb/db/sqlite3).

Each request runs in a thread of its own under ASGI: a connection Django closes outside any
transaction is given back and the next thread's ``connect`` takes it (its schema already
read), while one closed inside a transaction, one to a file that was replaced since, and one
beyond the pool's size are closed for real.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.db import connection, connections, transaction

from mrtrweb.db.sqlite3 import base
from mrtrweb.db.sqlite3.base import POOL_SIZE, _Pool

pytestmark = pytest.mark.django_db(transaction=True)


def _in_a_thread(work: Callable[[], Any]) -> Any:
    """Run ``work`` in a new thread (as a request runs) and close its connection after."""
    out: list[Any] = []

    def run() -> None:
        try:
            out.append(work())
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    return out[0]


def _raw() -> Any:
    connection.ensure_connection()
    return connection.connection


def test_the_next_thread_takes_the_connection_the_last_one_gave_back() -> None:
    assert isinstance(connections["default"], base.DatabaseWrapper)
    first = _in_a_thread(_raw)
    second = _in_a_thread(_raw)
    assert second is first
    # And it works as a new one would: Django's functions, pragmas and autocommit.
    rows = _in_a_thread(lambda: connection.cursor().execute("PRAGMA foreign_keys").fetchone())
    assert rows == (1,)
    assert _in_a_thread(lambda: connection.get_autocommit()) is True


def test_a_connection_closed_inside_a_transaction_is_not_kept() -> None:
    def close_inside() -> Any:
        raw = _raw()
        with transaction.atomic():
            connection.cursor().execute("SELECT 1")
            connection.close()
        return raw

    closed = _in_a_thread(close_inside)
    with pytest.raises(sqlite3.ProgrammingError):
        closed.execute("SELECT 1")  # really closed
    assert _in_a_thread(_raw) is not closed


def test_constraint_checks_switched_off_are_on_again_for_the_next_thread() -> None:
    def switch_off() -> None:
        connection.disable_constraint_checking()  # and never switched on again

    _in_a_thread(switch_off)
    rows = _in_a_thread(lambda: connection.cursor().execute("PRAGMA foreign_keys").fetchone())
    assert rows == (1,)


def test_a_file_replaced_since_gets_new_connections(tmp_path: Path) -> None:
    pool = _Pool()
    name = str(tmp_path / "one.sqlite3")
    old = sqlite3.connect(name, check_same_thread=False)
    old.execute("CREATE TABLE t (x)")
    assert pool.give(name, old)
    Path(name).unlink()
    sqlite3.connect(name).close()  # made again under the same name
    assert pool.take(name) is None
    with pytest.raises(sqlite3.ProgrammingError):
        old.execute("SELECT 1")
    assert pool.idle(name) == 0


def test_the_pool_keeps_so_many_and_no_more(tmp_path: Path) -> None:
    pool = _Pool()
    name = str(tmp_path / "many.sqlite3")
    sqlite3.connect(name).close()
    kept = [sqlite3.connect(name) for _ in range(POOL_SIZE)]
    assert all(pool.give(name, raw) for raw in kept)
    extra = sqlite3.connect(name)
    assert not pool.give(name, extra)
    assert pool.idle(name) == POOL_SIZE
    taken = pool.take(name)
    assert taken in kept
    assert pool.give(str(tmp_path / "gone.sqlite3"), extra) is False  # no such file
    pool.drain()
    assert pool.idle(name) == 0
    taken.execute("SELECT 1")  # the one taken out is its taker's
    for raw in kept:
        if raw is taken:
            continue
        with pytest.raises(sqlite3.ProgrammingError):
            raw.execute("SELECT 1")
