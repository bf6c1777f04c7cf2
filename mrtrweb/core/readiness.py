"""What ``/readyz`` checks: can this process serve its part of the work right now?

Three checks, run together, each with a bounded wait:

- ``database``: a connection and ``SELECT 1`` (PostgreSQL connects with a 5 s
  ``connect_timeout``, see ``env.database_config``);
- ``channel_layer``: a message sent to a fresh channel of this process and received back,
  the round trip every live update takes (Redis, or the in-memory layer);
- ``task_queue``: the django-tasks backend's table answers a query (nothing is enqueued, so
  no task is left behind); a backend without a queue (the immediate one) is ready.

A failure is reported by name and exception type only: the endpoint is public, so host
names and messages go to the log, not to the response.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.db import connection
from django_tasks import task_backends
from django_tasks_db.backend import DatabaseBackend
from django_tasks_db.models import DBTaskResult

logger = logging.getLogger(__name__)

CHECK_TIMEOUT = 3.0  # seconds, per check; the checks run together


@dataclass(frozen=True)
class Outcome:
    name: str
    ok: bool
    ms: float
    error: str = ""

    def as_json(self) -> dict[str, Any]:
        shown: dict[str, Any] = {"ok": self.ok, "ms": round(self.ms, 1)}
        if self.error:
            shown["error"] = self.error
        return shown


def _database() -> None:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    finally:
        connection.close()  # this thread's connection, back to the pool


def _task_queue() -> None:
    if isinstance(task_backends["default"], DatabaseBackend):
        try:
            # The table the workers poll; reading one id proves it is there and reachable.
            list(DBTaskResult.objects.order_by().values_list("pk", flat=True)[:1])
        finally:
            connection.close()


async def _channel_layer() -> None:
    layer = get_channel_layer()
    if layer is None:
        raise RuntimeError("no channel layer is configured")
    # types-channels leaves out the prefix every layer of channels takes.
    channel = await layer.new_channel("readyz.")  # type: ignore[call-arg]
    await layer.send(channel, {"type": "readyz.ping"})
    message = await layer.receive(channel)
    if message.get("type") != "readyz.ping":
        raise RuntimeError("the channel layer returned another message")


async def _timed(name: str, check: Callable[[], Awaitable[None]]) -> Outcome:
    started = time.perf_counter()
    try:
        await asyncio.wait_for(check(), CHECK_TIMEOUT)
    except Exception as error:  # any failure means "not ready"; the reason goes to the log
        elapsed = (time.perf_counter() - started) * 1000
        reason = "timeout" if isinstance(error, TimeoutError) else type(error).__name__
        # Probes repeat every few seconds: one line each, without a traceback.
        logger.warning("readiness check %s failed: %s: %s", name, reason, error)
        return Outcome(name, ok=False, ms=elapsed, error=reason)
    return Outcome(name, ok=True, ms=(time.perf_counter() - started) * 1000)


# The checks' own threads, not the event loop's default executor: a loop that ends (one per
# request under a WSGI server or the test client) waits for its executor's threads, and a
# check stuck on the database (the pool waits up to MRTRWEB_DB_POOL_TIMEOUT) would hold the
# answer that long.
_CHECKS = ThreadPoolExecutor(max_workers=4, thread_name_prefix="readyz")


async def run_checks() -> list[Outcome]:
    """Every check, concurrently; the whole run takes at most about CHECK_TIMEOUT.

    The database checks run in threads of their own, not the request's: a check stuck
    waiting for an unreachable database (its connect timeout, or the pool's) must not hold
    the request's thread, which Django needs again to finish the response.
    """
    return list(
        await asyncio.gather(
            _timed("database", sync_to_async(_database, thread_sensitive=False, executor=_CHECKS)),
            _timed("channel_layer", _channel_layer),
            _timed(
                "task_queue", sync_to_async(_task_queue, thread_sensitive=False, executor=_CHECKS)
            ),
        )
    )
