"""Delivery threads: the process that takes an answer (or starts a call) sends it at once.

Why: a round answered in a browser used to wait for a task worker to notice its task, claim
it and run it, several milliseconds and a thread hop more than the resubmission itself
(docs/performance.md). Now the answer's own process delivers it on a small pool of threads
and the answer page can wait a moment for the outcome. The task written with the answer stays
as the safety net: due a few seconds later, it finds the round already claimed and does
nothing, unless this process died first (:func:`mrtrweb.calls.engine.submit_answers`).
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

from django.conf import settings
from django.db import close_old_connections

from mrtrweb.mcp import io_loop

__all__ = ["shutdown", "start", "start_call", "wait_for"]

logger = logging.getLogger(__name__)

_lock = threading.Lock()
_executor: ThreadPoolExecutor | None = None


def _pool() -> ThreadPoolExecutor:
    global _executor
    with _lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(
                max_workers=max(1, int(getattr(settings, "MRTRWEB_DELIVERY_THREADS", 8))),
                thread_name_prefix="mrtrweb-deliver",
            )
        return _executor


def _on_this_thread(work: str, pk: int) -> None:
    """Run ``engine.<work>(pk)`` as a delivery thread must: its own database connection, and
    its requests on the process's shared event loop. A failure leaves the round claimed or
    submitted, or the call running: its watchdog, safety-net task or the sweep settles it."""
    from . import engine  # the engine imports this module

    close_old_connections()
    try:
        with io_loop.attached():
            getattr(engine, work)(pk)
    except Exception:
        logger.exception("%s(%s) on a delivery thread failed", work, pk)
        raise
    finally:
        close_old_connections()


def start(round_id: int) -> Future[None]:
    """Send a submitted round's answers on a delivery thread."""
    return _pool().submit(_on_this_thread, "deliver", round_id)


def start_call(call_id: int) -> Future[None]:
    """Send a new call's first request on a delivery thread."""
    return _pool().submit(_on_this_thread, "send_call", call_id)


def wait_for(future: Future[None], wait: float) -> bool:
    """Wait up to ``wait`` seconds for a delivery :func:`start` began; True if it finished."""
    if wait <= 0:
        return False
    try:
        future.result(timeout=wait)
    except FutureTimeout:
        return False
    except Exception:
        return True  # logged by the thread; the round's status says what happened
    return True


def shutdown(*, wait: bool = True) -> None:
    """Stop taking deliveries; those not started yet are left to their safety-net tasks."""
    global _executor
    with _lock:
        executor, _executor = _executor, None
    if executor is not None:
        executor.shutdown(wait=wait, cancel_futures=True)
