"""Delivery threads: the process that takes an answer (or starts a call) sends it at once.

Why: a task worker noticing a task, claiming it and running it costs several milliseconds and
a thread hop more than the resubmission itself (P1, docs/performance.md). So the answer's own
process delivers it on a small pool of threads, and the answer page can wait a moment for the
outcome. Should this process die first, the scheduler sends it once the round is due, a
few seconds later (``Round.watch_at``, :mod:`mrtrweb.calls.engine.due`).

It runs whatever the engine hands it (``resubmit``, ``send_call``) and imports nothing of the
engine: the engine uses this module, never the other way round.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from datetime import timedelta
from typing import Any, TypeVar

from django.conf import settings
from django.db import close_old_connections, connection

from mrtrweb.mcp import io_loop

from . import queue

__all__ = [
    "GRACE",
    "enabled",
    "outcome",
    "release_connection",
    "shutdown",
    "start",
    "stopping",
    "track",
    "wait_for",
]

T = TypeVar("T")

# How long the scheduler leaves work this process does itself to it before sending it
# itself. Long enough for a busy process to claim it, short enough that an answer taken by a
# process that died is sent soon after.
GRACE = timedelta(seconds=5)

logger = logging.getLogger(__name__)

_lock = threading.Lock()
_executor: ThreadPoolExecutor | None = None
# Work the engine runs on the shared event loop instead of a thread (a handshake-era call
# holds its stream while a person answers): waited for on shutdown, after being told to stop.
_detached: set[Future[Any]] = set()
_stopping = threading.Event()
# How long a shutdown waits for detached work to answer what it holds and end.
DETACHED_STOP_WAIT = 10.0


def _pool() -> ThreadPoolExecutor:
    global _executor
    with _lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(
                max_workers=max(1, int(settings.MRTRWEB_DELIVERY_THREADS)),
                thread_name_prefix="mrtrweb-deliver",
            )
        return _executor


def enabled() -> bool:
    """Whether this process sends what it takes itself: ``MRTRWEB_DELIVER_ON_ANSWER`` on, and
    a task backend that keeps tasks for a worker (the scheduler's sends go through it)."""
    return bool(settings.MRTRWEB_DELIVER_ON_ANSWER) and queue.can_defer("deliver_round")


def _on_this_thread(work: Callable[[int], T], pk: int) -> T:
    """Run ``work(pk)`` as a delivery thread must: its own database connection, and its
    requests on the process's shared event loop. A failure leaves the round claimed or
    submitted, or the call running: the scheduler settles it once due."""
    close_old_connections()
    try:
        with io_loop.attached():
            return work(pk)
    except Exception:
        logger.exception("%s(%s) on a delivery thread failed", work.__name__, pk)
        raise
    finally:
        close_old_connections()


def start(work: Callable[[int], T], pk: int) -> Future[T]:
    """Run ``work(pk)`` (the engine's ``resubmit`` of a round, ``send_call`` of a call) on a
    delivery thread; the future holds what it returned."""
    return _pool().submit(_on_this_thread, work, pk)


def release_connection() -> None:
    """Hand this thread's database connection back to the pool before it waits.

    A request's sync code runs in a thread of its own, which keeps its pooled connection
    until the request ends. A page waiting a second for its delivery, or a request held
    while a call moves on, would keep it all that time; a crowd of them (a hundred starts at
    once) would take every connection of the pool (ten by default), and the delivery threads
    they wait for would queue behind them for one (P7). SQLite has no pool: its
    connection is only a file, kept. Not inside a transaction (a test's, or an outer
    ``atomic``), whose connection is not this function's to close.
    """
    if getattr(connection, "pool", None) is not None and not connection.in_atomic_block:
        connection.close()


def wait_for(future: Future[Any], wait: float) -> bool:
    """Wait up to ``wait`` seconds for a delivery :func:`start` began; True if it finished.
    The connection goes back to the pool meanwhile (:func:`release_connection`), unless
    there is nothing to wait for: taking it back costs a health check."""
    if wait <= 0:
        return False
    try:
        if not future.done():
            release_connection()
        future.result(timeout=wait)
    except FutureTimeout:
        return False
    except Exception:
        return True  # logged by the thread; the round's status says what happened
    return True


def outcome(future: Future[T | None], wait: float) -> T | None:
    """What the work :func:`start` began returned, if it finished within ``wait`` seconds
    (:func:`wait_for`) and did not fail; else None."""
    if not wait_for(future, wait):
        return None
    try:
        return future.result(timeout=0)
    except Exception:  # failed or cancelled: logged by the thread, the rows say what happened
        return None


def track(future: Future[Any]) -> None:
    """Remember detached work (a coroutine on the shared loop) until it ends, so that
    :func:`shutdown` waits for it."""
    with _lock:
        _detached.add(future)
    future.add_done_callback(_forget)


def _forget(future: Future[Any]) -> None:
    with _lock:
        _detached.discard(future)


def stopping() -> bool:
    """Whether this process is shutting down: detached work answers what it holds and ends."""
    return _stopping.is_set()


def shutdown(*, wait: bool = True) -> None:
    """Stop taking deliveries; those not started yet are left to the scheduler.
    Detached work is told to stop (:func:`stopping`) and waited for, a little."""
    global _executor
    with _lock:
        executor, _executor = _executor, None
        detached = list(_detached)
    if detached:
        _stopping.set()
        concurrent.futures.wait(detached, timeout=DETACHED_STOP_WAIT if wait else 0)
        _stopping.clear()
    if executor is not None:
        executor.shutdown(wait=wait, cancel_futures=True)
