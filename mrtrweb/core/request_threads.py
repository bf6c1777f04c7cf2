"""Each HTTP request's synchronous code in a thread of its own, kept for later requests.

Under ASGI, Django runs a request's synchronous code (the middleware, the view) in a thread
of that request alone (asgiref's ``ThreadSensitiveContext``), so requests do not queue behind
each other. It starts that thread for the request and, when the request ends, starts another
to wait for it to stop: two threads started and joined on every request, the first of them
started while the event loop waits. :class:`RequestThreads` gives each request a thread that
earlier requests used instead, through asgiref's own way of choosing one
(``ThreadSensitiveContext(executor=...)``): still one request's code at a time in a thread, as
WSGI servers run Django, and as many threads as requests run at once.

A thread goes back to the idle ones only once it has finished everything its request gave
it: a request that ended early (its client went away) may leave its view still running in
the thread, and the next request must not queue behind that. Threads beyond
:data:`KEEP_IDLE` idle ones stop.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from asgiref.sync import ThreadSensitiveContext

__all__ = ["RequestThreads"]

# Threads kept idle beyond this many stop: a crowd of requests leaves no crowd of threads.
KEEP_IDLE = 16

Scope = dict[str, Any]
T = TypeVar("T")


class _RequestThread(ThreadPoolExecutor):
    """One thread (a single-worker executor) that knows whether it has work in hand."""

    def __init__(self, number: int) -> None:
        super().__init__(max_workers=1, thread_name_prefix=f"mrtrweb-request-{number}")
        self._busy = 0
        self._then: Callable[[], None] | None = None
        self._count_lock = threading.Lock()

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        with self._count_lock:
            self._busy += 1
        try:
            future = super().submit(fn, *args, **kwargs)
        except BaseException:
            self._finished()
            raise
        # Called in the worker as the work ends, before whoever awaits it resumes.
        future.add_done_callback(lambda _: self._finished())
        return future

    def _finished(self) -> None:
        then = None
        with self._count_lock:
            self._busy -= 1
            if self._busy == 0:
                then, self._then = self._then, None
        if then is not None:
            then()

    def when_idle(self, then: Callable[[], None]) -> None:
        """``then()`` now if nothing is in hand, else once the last of it has ended."""
        with self._count_lock:
            if self._busy:
                self._then = then
                return
        then()


class _Idle:
    """The idle request threads, the one used last first."""

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self._threads: list[_RequestThread] = []
        self._lock = threading.Lock()
        self._made = 0

    def take(self) -> _RequestThread:
        with self._lock:
            if self._threads:
                return self._threads.pop()
            self._made += 1
            number = self._made
        return _RequestThread(number)

    def give_back(self, thread: _RequestThread) -> None:
        thread.when_idle(lambda: self._rest(thread))

    def _rest(self, thread: _RequestThread) -> None:
        with self._lock:
            if len(self._threads) < self.keep:
                self._threads.append(thread)
                return
        thread.shutdown(wait=False)

    def __len__(self) -> int:
        return len(self._threads)


class RequestThreads:
    """ASGI middleware: HTTP requests run their synchronous code in reused threads.

    Wraps Django's ASGI application, whose own ``ThreadSensitiveContext`` then finds this one
    already set and leaves it alone (only the outermost context chooses the thread).
    """

    def __init__(self, app: Any, *, keep_idle: int = KEEP_IDLE) -> None:
        self.app = app
        self.idle = _Idle(keep_idle)

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        thread = self.idle.take()
        try:
            async with ThreadSensitiveContext(executor=thread):
                await self.app(scope, receive, send)
        finally:
            self.idle.give_back(thread)
