"""The served app answers the ASGI lifespan, starting and stopping the in-process worker."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.testing import ApplicationCommunicator

from mrtrweb.live import events, worker

pytestmark = pytest.mark.django_db(transaction=True)


async def test_lifespan_starts_and_stops_the_worker_when_the_settings_ask(settings: Any) -> None:
    from mrtrweb.asgi import application

    settings.MRTRWEB_INPROCESS_WORKER = True
    life = ApplicationCommunicator(application, {"type": "lifespan", "asgi": {"version": "3.0"}})
    await life.send_input({"type": "lifespan.startup"})
    assert await life.receive_output(timeout=5) == {"type": "lifespan.startup.complete"}
    running = worker._worker
    assert running is not None and running.alive
    assert events._web_loop is not None

    await life.send_input({"type": "lifespan.shutdown"})
    assert await life.receive_output(timeout=15) == {"type": "lifespan.shutdown.complete"}
    assert worker._worker is None and not running.alive
    assert events._web_loop is None


async def test_without_the_setting_lifespan_starts_nothing(settings: Any) -> None:
    from mrtrweb.asgi import application

    settings.MRTRWEB_INPROCESS_WORKER = False
    life = ApplicationCommunicator(application, {"type": "lifespan", "asgi": {"version": "3.0"}})
    await life.send_input({"type": "lifespan.startup"})
    assert await life.receive_output(timeout=5) == {"type": "lifespan.startup.complete"}
    assert worker._worker is None
    await life.send_input({"type": "lifespan.shutdown"})
    assert await life.receive_output(timeout=5) == {"type": "lifespan.shutdown.complete"}
