"""Where a flow's CPU time goes, by what spends it: what holds the flow's CPU back.

:class:`Spending` wraps, while it is entered, the few places the CPU of a page goes through:
Django compiling a query to SQL (``SQLCompiler.as_sql``, every compiler the backend uses); the
rest of Django's ORM (building a query's filters, ``Query.add_q``; fetching and turning rows
into objects, ``QuerySet._fetch_all``; ``count``, ``exists``, ``update``, and a model's own
row written, ``Model._save_table``, without the signals around it); the database executing a
statement (``CursorWrapper`` execute, the driver's call); and templates rendering
(``Template.render``). Time is counted on each thread's own CPU clock and given to the
innermost of them that runs (a query a template makes counts as the query's, not the
template's). What the threads that run the shared MCP event loop and the live updates' loop
spend is read from their own clocks: the MCP client (``httpx``, the wire models) and the
channel layer. The rest of the measuring thread's time is Django's request handling (the
middleware, the session, the forms) and the app's own Python.

The wrappers cost a little themselves (a clock read on entry and on exit, a microsecond or
so); the flow's CPU figures come from flows run without them.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

# What is counted, in the order the table prints it, and the words it prints.
PARTS = {
    "sql_compile": "SQL compiling",
    "orm": "the rest of the ORM",
    "database": "database",
    "templates": "templates",
    "mcp_loop": "MCP client loop",
    "live_loop": "live updates loop",
    "rest": "the rest",
}
# The places each part wraps besides the compilers, as (module, class, method).
_PLACES = {
    "orm": (
        ("django.db.models.sql.query", "Query", "add_q"),
        ("django.db.models.query", "QuerySet", "_fetch_all"),
        # The sign-in's person and permissions (accounts.backends, through raw()).
        ("django.db.models.query", "RawQuerySet", "_fetch_all"),
        ("django.db.models.query", "QuerySet", "count"),
        ("django.db.models.query", "QuerySet", "exists"),
        ("django.db.models.query", "QuerySet", "update"),
        ("django.db.models.query", "QuerySet", "_insert"),
        ("django.db.models.base", "Model", "_save_table"),
    ),
    "database": (
        ("django.db.backends.utils", "CursorWrapper", "_execute"),
        ("django.db.backends.utils", "CursorWrapper", "_executemany"),
    ),
    "templates": (("django.template.base", "Template", "render"),),
}
_WRAPPED = ("sql_compile", "orm", "database", "templates")


class Spending:
    """CPU seconds by part, summed over every time it was entered (:meth:`measuring`)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = dict.fromkeys(PARTS, 0.0)
        self._local = threading.local()
        self._undo: list[Callable[[], None]] = []

    # -- the wrappers --------------------------------------------------------------------------

    def _enter(self, part: str) -> None:
        stack = self._stack()
        now = time.thread_time()
        if stack:
            outer, mark = stack[-1]
            self.seconds[outer] += now - mark
        stack.append((part, now))

    def _exit(self) -> None:
        stack = self._stack()
        now = time.thread_time()
        part, mark = stack.pop()
        self.seconds[part] += now - mark
        if stack:
            stack[-1] = (stack[-1][0], now)

    def _stack(self) -> list[tuple[str, float]]:
        stack = getattr(self._local, "stack", None)
        if stack is None:
            stack = self._local.stack = []
        return stack

    def _wrap(self, owner: type, name: str, part: str) -> None:
        original = owner.__dict__.get(name)
        inherited = getattr(owner, name)

        def counted(*args: Any, **kwargs: Any) -> Any:
            self._enter(part)
            try:
                return inherited(*args, **kwargs)
            finally:
                self._exit()

        setattr(owner, name, counted)
        if original is None:
            self._undo.append(lambda: delattr(owner, name))
        else:
            self._undo.append(lambda: setattr(owner, name, original))

    # -- entering ------------------------------------------------------------------------------

    @contextlib.contextmanager
    def measuring(self, loops: dict[str, threading.Thread | None]) -> Iterator[None]:
        """Count what the wrapped places spend on any thread, and what the threads of
        ``loops`` (part -> the thread running that loop) spend, while inside."""
        import importlib

        from django.db import connection

        compilers = {
            connection.ops.compiler(name)
            for name in (
                "SQLCompiler",
                "SQLInsertCompiler",
                "SQLUpdateCompiler",
                "SQLDeleteCompiler",
                "SQLAggregateCompiler",
            )
        }
        for compiler in compilers:
            self._wrap(compiler, "as_sql", "sql_compile")
        for part, places in _PLACES.items():
            for module, owner, name in places:
                self._wrap(getattr(importlib.import_module(module), owner), name, part)
        clocks = {
            part: time.pthread_getcpuclockid(thread.ident)
            for part, thread in loops.items()
            if thread is not None and thread.ident is not None
        }
        started = {part: time.clock_gettime(clock) for part, clock in clocks.items()}
        own = time.thread_time()
        before = {part: self.seconds[part] for part in _WRAPPED}
        try:
            yield
        finally:
            own = time.thread_time() - own
            for part, clock in clocks.items():
                self.seconds[part] += time.clock_gettime(clock) - started[part]
            while self._undo:
                self._undo.pop()()
            # This thread's time the wrapped places did not take: the request handling and
            # the app's own Python (what the wrapped places spent on other threads, none in
            # the flow, is not taken off it).
            wrapped = sum(self.seconds[part] - before[part] for part in before)
            self.seconds["rest"] += max(0.0, own - wrapped)

    def per_flow_ms(self, flows: int) -> dict[str, float]:
        return {part: self.seconds[part] * 1000.0 / flows for part in PARTS}
