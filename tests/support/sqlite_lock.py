"""SQLite's write lock held by another connection, for tests of what a busy database does."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from django.db import connection

sqlite_only = pytest.mark.skipif(
    connection.vendor != "sqlite", reason="SQLite's write lock (PostgreSQL: tests/scaleout)"
)


@contextmanager
def write_lock_held(release_after: float | None = None) -> Iterator[None]:
    """Another connection (another process, as far as SQLite can tell) holds the write lock;
    let go when the block ends, or after ``release_after`` seconds."""
    other = sqlite3.connect(
        connection.settings_dict["NAME"], timeout=5, isolation_level=None, check_same_thread=False
    )
    other.execute("BEGIN IMMEDIATE")
    timer = None
    if release_after is not None:
        timer = threading.Timer(release_after, lambda: other.execute("ROLLBACK"))
        timer.start()
    try:
        yield
    finally:
        if timer is not None:
            timer.join()
        else:
            other.execute("ROLLBACK")
        other.close()


@contextmanager
def lock_timeout(milliseconds: int) -> Iterator[None]:
    """This thread's connection waits ``milliseconds`` for the lock (settings: 20 s)."""
    connection.ensure_connection()
    connection.connection.execute(f"PRAGMA busy_timeout = {milliseconds}")
    try:
        yield
    finally:
        connection.connection.execute("PRAGMA busy_timeout = 20000")
