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
from mrtrweb.db.sqlite3.base import POOL_SIZE, _identity, _Pool

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
    assert pool.give(name, old, _identity(name))
    Path(name).unlink()
    sqlite3.connect(name).close()  # made again under the same name
    assert pool.take(name) is None
    with pytest.raises(sqlite3.ProgrammingError):
        old.execute("SELECT 1")
    assert pool.idle(name) == 0


def test_a_file_replaced_while_the_connection_was_in_use_gets_new_ones(tmp_path: Path) -> None:
    """What a connection reads is the file it opened: given back after its file was replaced,
    it is known by the identity it opened on, not the new file's, and nobody takes it."""
    pool = _Pool()
    name = str(tmp_path / "two.sqlite3")
    opened_on = _made(name)
    old = sqlite3.connect(name, check_same_thread=False)
    Path(name).unlink()
    sqlite3.connect(name).close()  # replaced while ``old`` was in use
    assert pool.give(name, old, opened_on)
    assert pool.take(name) is None
    assert pool.idle(name) == 0


def _made(name: str) -> tuple[int, int]:
    sqlite3.connect(name).close()
    identity = _identity(name)
    assert identity is not None
    return identity


def test_a_connection_taken_from_the_pool_runs_no_statement() -> None:
    """Taking a kept connection is a ``stat`` of the file, nothing more: no pragma set again
    (one whose constraint checks were switched off is not kept: below)."""
    raw = _in_a_thread(_raw)
    statements: list[str] = []
    raw.set_trace_callback(statements.append)
    try:
        assert _in_a_thread(_raw) is raw
        assert statements == []
    finally:
        raw.set_trace_callback(None)


def test_a_connection_whose_constraint_checks_are_off_is_not_kept() -> None:
    def switch_off() -> Any:
        raw = _raw()
        connection.disable_constraint_checking()
        return raw

    off = _in_a_thread(switch_off)
    with pytest.raises(sqlite3.ProgrammingError):
        off.execute("SELECT 1")  # closed for real

    # Switched on again before closing, a connection is kept as any other.
    def off_and_on() -> Any:
        raw = _raw()
        with connection.constraint_checks_disabled():
            pass
        return raw

    kept = _in_a_thread(off_and_on)
    assert _in_a_thread(_raw) is kept


def test_the_pool_keeps_so_many_and_no_more(tmp_path: Path) -> None:
    pool = _Pool()
    name = str(tmp_path / "many.sqlite3")
    sqlite3.connect(name).close()
    identity = _identity(name)
    kept = [sqlite3.connect(name) for _ in range(POOL_SIZE)]
    assert all(pool.give(name, raw, identity) for raw in kept)
    extra = sqlite3.connect(name)
    assert not pool.give(name, extra, identity)
    assert pool.idle(name) == POOL_SIZE
    taken, taken_on = pool.take(name) or (None, None)
    assert taken in kept and taken_on == identity
    gone = str(tmp_path / "gone.sqlite3")
    assert pool.give(gone, extra, _identity(gone)) is False  # no such file
    pool.drain()
    assert pool.idle(name) == 0
    taken.execute("SELECT 1")  # the one taken out is its taker's
    for raw in kept:
        if raw is taken:
            continue
        with pytest.raises(sqlite3.ProgrammingError):
            raw.execute("SELECT 1")
