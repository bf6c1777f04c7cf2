"""HTTP requests run their synchronous code in reused threads (mrtrweb/core/request_threads.py),
one request at a time in a thread, as many threads as requests run at once."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import httpx
import pytest
from asgiref.sync import sync_to_async
from django.core.asgi import get_asgi_application
from django.test import override_settings

from mrtrweb.core.request_threads import RequestThreads
from tests.core import thread_urls

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


def client(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver")


@override_settings(ROOT_URLCONF="tests.core.thread_urls")
async def test_django_runs_each_request_in_a_thread_an_earlier_request_used() -> None:
    app = RequestThreads(get_asgi_application())
    async with client(app) as http:
        names = [(await http.get("/thread/")).text for _ in range(4)]
    assert names[0].startswith("mrtrweb-request-")
    assert names == [names[0]] * 4
    assert names[0] != threading.current_thread().name


@override_settings(ROOT_URLCONF="tests.core.thread_urls")
async def test_requests_at_the_same_time_run_in_threads_of_their_own() -> None:
    """Each waits in the view for the other: in one thread they could not both be there."""
    thread_urls.together.reset()
    app = RequestThreads(get_asgi_application())
    async with client(app) as http:
        first, second = await asyncio.gather(http.get("/meet/"), http.get("/meet/"))
    assert first.status_code == second.status_code == 200
    assert first.text != second.text
    assert len(app.idle) == 2


def _plain_app(work: Any) -> Any:
    """An ASGI app whose request runs ``work`` in its thread-sensitive thread."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        name = await work()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": name.encode()})

    return app


async def test_a_thread_still_busy_with_an_ended_request_is_not_handed_to_the_next() -> None:
    """A request that ends before its synchronous code does (Django cancels the request when
    its client leaves; the thread runs the view to its end) leaves the thread busy: the next
    request gets another one at once, and the busy one is idle again once it is done."""
    release = threading.Event()

    def slow() -> str:
        release.wait(timeout=5)
        return threading.current_thread().name

    calls = 0

    async def work() -> str:
        nonlocal calls
        calls += 1
        if calls == 1:
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(sync_to_async(slow)(), 0.05)
            return "gave up"
        return await sync_to_async(lambda: threading.current_thread().name)()

    app = RequestThreads(_plain_app(work))
    async with client(app) as http:
        assert (await http.get("/")).text == "gave up"
        started = time.monotonic()
        second = (await http.get("/")).text
        waited = time.monotonic() - started
    assert second.startswith("mrtrweb-request-2")
    assert waited < 1.0
    assert len(app.idle) == 1  # the second request's thread; the first is still busy
    release.set()
    for _ in range(100):
        if len(app.idle) == 2:
            break
        await asyncio.sleep(0.02)
    assert len(app.idle) == 2


async def test_no_more_threads_stay_idle_than_it_keeps() -> None:
    gate = threading.Barrier(5)

    def meet() -> str:
        gate.wait(timeout=5)
        return str(threading.get_ident())

    app = RequestThreads(_plain_app(sync_to_async(meet)), keep_idle=2)
    async with client(app) as http:
        idents = {int(r.text) for r in await asyncio.gather(*(http.get("/") for _ in range(5)))}
    assert len(idents) == 5
    assert len(app.idle) == 2

    def alive() -> int:
        return len([t for t in threading.enumerate() if t.ident in idents])

    for _ in range(100):  # the three threads beyond those kept stop
        if alive() == 2:
            break
        await asyncio.sleep(0.02)
    assert alive() == 2


async def test_websockets_and_lifespan_pass_through_untouched() -> None:
    seen: list[str] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        seen.append(scope["type"])

    wrapped = RequestThreads(app)
    await wrapped({"type": "websocket"}, None, None)
    await wrapped({"type": "lifespan"}, None, None)
    assert seen == ["websocket", "lifespan"]
    assert len(wrapped.idle) == 0
