"""Django's SQLite backend, with its connections kept open for the next thread.

Why: under ASGI every request runs in a thread of its own, and ``CONN_MAX_AGE`` keeps a
connection per thread, so each request (and each delivery) opened the database file anew. A
new SQLite connection reads the whole schema on its first statement, about 0.7 ms of CPU with
this app's tables, a sixth of what a trivial signed-in page costs. PostgreSQL has Django's
pool for this; here, a connection Django closes outside any transaction goes back to a small
pool of the process, and the next thread to connect takes it, schema already read.

What a pooled connection carries over is only what Django sets when it connects (its
functions, pragmas, autocommit), and it is taken only if its database file is still the one it
opened (a file deleted and made again under the same name gets new connections). One that
was closed inside a transaction, with its constraint checks switched off, or that finds the
pool full, is closed for real. So taking one costs a ``stat`` of the file and nothing else:
no statement, and no ``stat`` when it is given back (each is a system call, and under load a
thread that makes one waits for the interpreter's lock again after it).

Its cursors convert each statement's placeholders once (:mod:`.cursors`).
"""

from __future__ import annotations

import os
import threading
from typing import Any

from django.db.backends.sqlite3 import base

from .cursors import SQLiteCursorWrapper

__all__ = ["POOL_SIZE", "DatabaseWrapper"]

# Idle connections kept per database file: enough for the request and delivery threads one
# process runs at once; more than that are closed when given back.
POOL_SIZE = 16


class _Pool:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        # File name -> idle connections, each with the file's identity when it was opened.
        self._idle: dict[str, list[tuple[Any, tuple[int, int] | None]]] = {}

    def take(self, name: str) -> tuple[Any, tuple[int, int]] | None:
        """An idle connection to ``name``'s file as it is now, with that file's identity, or
        None."""
        identity = _identity(name)
        while True:
            with self._lock:
                idle = self._idle.get(name)
                if not idle:
                    return None
                raw, opened_on = idle.pop()
            if opened_on == identity and identity is not None:
                return raw, identity
            raw.close()  # the file was replaced (or is gone): this one reads the old one

    def give(self, name: str, raw: Any, identity: tuple[int, int] | None) -> bool:
        """Keep ``raw``, opened on the file whose identity was ``identity``, for the next
        thread; False when there is no room or no identity (close it then)."""
        if identity is None:
            return False
        with self._lock:
            idle = self._idle.setdefault(name, [])
            if len(idle) >= POOL_SIZE:
                return False
            idle.append((raw, identity))
            return True

    def forget(self) -> None:
        """Drop every idle connection unclosed, and the lock with them: a forked child must
        not touch its parent's connections, nor wait on a lock another thread held."""
        self._lock = threading.Lock()
        self._idle = {}

    def drain(self) -> None:
        """Close every idle connection (tests, and a process that forks)."""
        with self._lock:
            idle, self._idle = self._idle, {}
        for connections in idle.values():
            for raw, _opened_on in connections:
                raw.close()

    def idle(self, name: str) -> int:
        with self._lock:
            return len(self._idle.get(name, []))


def _identity(name: str) -> tuple[int, int] | None:
    try:
        stat = os.stat(name)
    except OSError:
        return None
    return (stat.st_dev, stat.st_ino)


pool = _Pool()
# A child process must not share its parent's open connections.
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=pool.forget)


class DatabaseWrapper(base.DatabaseWrapper):
    # The identity of the file this wrapper's connection opened (None: not to be pooled).
    _opened_on: tuple[int, int] | None = None
    # Constraint checks switched off (loading data, migrating) and not yet on again.
    _constraints_off = False

    def create_cursor(self, name: str | None = None) -> Any:
        return self.connection.cursor(factory=SQLiteCursorWrapper)

    def get_new_connection(self, conn_params: dict[str, Any]) -> Any:
        name = self._pool_name()
        taken = pool.take(name) if name is not None else None
        if taken is not None:
            raw, self._opened_on = taken
            return raw
        # Read before connecting: should the file be replaced in between, the connection is
        # taken for one to the older file, and never pooled, rather than the other way round.
        self._opened_on = _identity(name) if name is not None else None
        return super().get_new_connection(conn_params)

    def disable_constraint_checking(self) -> bool:
        self._constraints_off = True
        return bool(super().disable_constraint_checking())

    def enable_constraint_checking(self) -> None:
        super().enable_constraint_checking()
        self._constraints_off = False

    def _close(self) -> None:
        raw = self.connection
        name = self._pool_name()
        kept = (
            raw is not None
            and name is not None
            and not self._constraints_off
            and not self.in_atomic_block
            and not raw.in_transaction
            and pool.give(name, raw, self._opened_on)
        )
        self._opened_on, self._constraints_off = None, False
        if not kept:
            # django-stubs leaves out the backend's own close.
            super()._close()  # type: ignore[misc]

    def _pool_name(self) -> str | None:
        """The file this wrapper's connections open, None when they are not pooled (an
        in-memory database, which Django never closes anyway)."""
        if self.is_in_memory_db():
            return None
        return os.fspath(self.settings_dict["NAME"])
