"""The embedded default's task worker: django-tasks-db's own ``Worker``, in a thread of the web
process.

Why: the in-memory channel layer cannot cross processes, so with no ``REDIS_URL`` the events
raised while delivering answers must be raised in the process that holds the browsers'
sockets. Tasks stay rows in the database (durable, and still runnable by ``manage.py
db_worker``); only where they run changes.

``MRTRWEB_INPROCESS_WORKER`` (default: on without ``REDIS_URL``, off with it) turns it on. The
ASGI app starts it on the lifespan startup or on the first request or socket it serves, never on
import, so ``manage.py`` commands, migrations and tests never run it. A task enqueued in this
process wakes it at once; tasks enqueued elsewhere (a command, another process) are found by
polling every ``MRTRWEB_INPROCESS_WORKER_INTERVAL`` seconds (default 0.5). The scheduler
(:mod:`mrtrweb.scheduler`) runs beside it, as beside every ``db_worker``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import threading
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from django.conf import settings
from django.db import connections, transaction
from django.utils import timezone
from django_tasks.signals import task_enqueued
from django_tasks_db.management.commands.db_worker import Worker

from mrtrweb.calls import handoff
from mrtrweb.scheduler.poller import Poller

from .events import remember_web_loop

logger = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

# How long a lifespan shutdown waits for the task in hand (a delivery has its own timeouts).
STOP_TIMEOUT = 30.0
# Between retries while another writer holds SQLite's lock.
_LOCKED_RETRY = 0.05


THREAD_NAME = "mrtrweb-inprocess-worker"


class _QuietDrains(logging.Filter):
    """django-tasks-db logs the start and end of every run of its loop; this thread runs it
    once per wake-up or poll, so those two lines would fill the log. Tasks still log."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.threadName != THREAD_NAME:
            return True
        message = str(record.msg)
        return not message.startswith(("Starting worker", "No more tasks to run"))


_quiet = _QuietDrains()


class InProcessWorker:
    """Runs every queue's ready tasks, one at a time, in a daemon thread."""

    def __init__(self, *, interval: float, backend_name: str = "default") -> None:
        self.interval = interval
        self.backend_name = backend_name
        self.worker_id = f"web-{socket.gethostname()[:40]}-{os.getpid()}"
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._current: Worker | None = None
        self._thread: threading.Thread | None = None
        self._poller: Poller | None = None

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        task_enqueued.connect(self._enqueued, weak=False, dispatch_uid=f"inprocess-{id(self)}")
        logging.getLogger("django_tasks_db").addFilter(_quiet)
        self._thread = threading.Thread(target=self._loop, name=THREAD_NAME, daemon=True)
        self._thread.start()
        self._poller = Poller().start()
        logger.info("in-process task worker started (%s)", self.worker_id)

    def wake(self) -> None:
        self._wake.set()

    def stop(self, timeout: float = STOP_TIMEOUT) -> None:
        """Finish the task in hand, then stop."""
        task_enqueued.disconnect(dispatch_uid=f"inprocess-{id(self)}")
        self._stopping.set()
        current = self._current
        if current is not None:
            current.running = False
        self._wake.set()
        if self._poller is not None:
            self._poller.stop(timeout)
        if self._thread is not None:
            self._thread.join(timeout)

    def _enqueued(self, sender: Any, task_result: Any = None, **kwargs: Any) -> None:
        # A task due later is found by the regular look; waking now would only find nothing
        # to run.
        run_after = getattr(getattr(task_result, "task", None), "run_after", None)
        if run_after is not None and run_after > timezone.now():
            return
        # The row is visible to this thread's connection only once the enqueuing transaction
        # commits (at once outside a transaction).
        transaction.on_commit(self.wake)

    def _loop(self) -> None:
        try:
            while not self._stopping.is_set():
                # Cleared before draining: a task enqueued meanwhile wakes the next round.
                self._wake.clear()
                self._drain()
                self._wake.wait(self.interval)
        finally:
            connections.close_all()

    def _drain(self) -> None:
        # django-tasks-db's own loop in batch mode: claim (so no other worker runs it), run and
        # record every ready task, then return when the queue is empty.
        self._current = Worker(
            queue_names=["*"],
            interval=_LOCKED_RETRY,
            batch=True,
            backend_name=self.backend_name,
            startup_delay=False,
            max_tasks=None,
            worker_id=self.worker_id,
            excluded_queue_names=[],
        )
        if self._stopping.is_set():
            return
        try:
            self._current.run()
        except Exception:
            # The database may be away for a moment; the next round tries again.
            logger.exception("the in-process task worker failed; trying again")
        finally:
            self._current = None


_worker: InProcessWorker | None = None
_lock = threading.Lock()


def start_inprocess_worker() -> InProcessWorker | None:
    """Start this process's worker once, if the settings ask for one."""
    global _worker
    if not settings.MRTRWEB_INPROCESS_WORKER:
        return None
    with _lock:
        if _worker is None or not _worker.alive:
            _worker = InProcessWorker(interval=settings.MRTRWEB_INPROCESS_WORKER_INTERVAL)
            _worker.start()
        return _worker


def stop_inprocess_worker(timeout: float = STOP_TIMEOUT) -> None:
    global _worker
    with _lock:
        worker, _worker = _worker, None
    if worker is not None:
        worker.stop(timeout)


def _serving() -> None:
    remember_web_loop(asyncio.get_running_loop())
    start_inprocess_worker()


def with_inprocess_worker(app: Callable[..., Awaitable[None]]) -> ASGIApp:
    """Wrap the ASGI app: answer the lifespan protocol, and start the worker when serving."""

    async def application(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if _worker is None or not _worker.alive:
            _serving()
        await app(scope, receive, send)

    return application


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            try:
                _serving()
            except Exception as exc:
                await send({"type": "lifespan.startup.failed", "message": str(exc)})
                return
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            # In a thread: the task in hand may be publishing through this very loop. Answers
            # not yet being sent are left to their safety-net tasks.
            await asyncio.to_thread(stop_inprocess_worker)
            await asyncio.to_thread(handoff.shutdown)
            remember_web_loop(None)
            await send({"type": "lifespan.shutdown.complete"})
            return
