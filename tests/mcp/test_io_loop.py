"""The shared MCP event loop (mrtrweb/mcp/io_loop.py): which loop a thread's ``async_to_sync``
calls run on inside ``attached()``."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

from asgiref.sync import SyncToAsync, async_to_sync, sync_to_async

from mrtrweb.mcp import io_loop


async def _running_loop() -> asyncio.AbstractEventLoop:
    return asyncio.get_running_loop()


def _in_a_new_thread(work):  # type: ignore[no-untyped-def]
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(work).result(timeout=10)


def test_a_plain_thread_runs_its_calls_on_the_shared_loop() -> None:
    async def where() -> tuple[asyncio.AbstractEventLoop, bool]:
        return asyncio.get_running_loop(), io_loop.is_current()

    def work() -> tuple[asyncio.AbstractEventLoop, bool]:
        with io_loop.attached():
            return async_to_sync(where)()

    loop, current = _in_a_new_thread(work)
    assert loop is io_loop._shared_loop()
    assert current


def test_a_finished_loop_left_in_the_thread_is_not_taken_for_its_own() -> None:
    """asgiref records, in a thread that ran ``sync_to_async`` work for an ``async_to_sync``
    call, that call's temporary loop, and leaves it there closed. A task worker's thread that
    once did so (a catalog refresh, say) must still send its MCP requests on the shared loop,
    over pooled connections, not start a new loop, thread and connection each time."""

    def work() -> tuple[asyncio.AbstractEventLoop, asyncio.AbstractEventLoop]:
        async def hands_work_back() -> None:
            await sync_to_async(lambda: None)()  # thread-sensitive: runs in this thread

        async_to_sync(hands_work_back)()
        stale = SyncToAsync.threadlocal.main_event_loop
        with io_loop.attached():
            return stale, async_to_sync(_running_loop)()

    stale, loop = _in_a_new_thread(work)
    assert stale.is_closed()
    assert loop is io_loop._shared_loop()


def test_a_thread_under_a_live_loop_keeps_it() -> None:
    """Code called through ``sync_to_async`` (a request under an ASGI server) goes back to
    the loop that waits on it, as asgiref does by itself."""

    def inner() -> asyncio.AbstractEventLoop:
        with io_loop.attached():
            return async_to_sync(_running_loop)()

    async def outer() -> tuple[asyncio.AbstractEventLoop, asyncio.AbstractEventLoop]:
        return asyncio.get_running_loop(), await sync_to_async(inner)()

    outer_loop, inner_loop = _in_a_new_thread(lambda: asyncio.run(outer()))
    assert inner_loop is outer_loop
    assert inner_loop is not io_loop._shared_loop()


async def test_submitted_work_outlives_the_request_that_submitted_it() -> None:
    """A handshake-era conversation submitted from a request's thread goes on after the
    request ends, and its thread-sensitive work (a progress write) must still run, not in the
    request's thread: the task does not inherit the request's context (asgiref refuses
    thread-sensitive calls from a task that outlived a context with an executor of its own;
    tests/api/test_handshake.py shows the hang while the request still waits)."""
    from asgiref.sync import ThreadSensitiveContext

    request_over = threading.Event()

    async def conversation() -> str:
        await asyncio.get_running_loop().run_in_executor(None, request_over.wait, 5)
        return await sync_to_async(lambda: threading.current_thread().name)()

    request_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="a-request")
    try:
        async with ThreadSensitiveContext(executor=request_thread):
            submitted = await sync_to_async(lambda: io_loop.submit(conversation()))()
        request_over.set()
        ran_in = await asyncio.wrap_future(submitted)
    finally:
        request_thread.shutdown()
    assert not ran_in.startswith("a-request")
