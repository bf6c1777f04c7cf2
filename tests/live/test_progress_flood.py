"""A server that floods progress reaches a watching page as a few frames, not one per message.

The hostile peer's ``progress-flood`` sends 40,000 ``notifications/progress`` before its
result; pushed one frame each to every watching browser, they held the delivery for 39 s.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from channels.db import database_sync_to_async

from mrtrweb.calls.engine.progress import ANNOUNCE_EVERY, on_progress
from mrtrweb.calls.models import Call
from mrtrweb.mcp import ConnectionSettings, MCPClient
from mrtrweb.servers.models import Connection
from tests.factories import CallFactory

from .conftest import kinds_of

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("layer")]


@database_sync_to_async
def running_call(peer: Any, caller: Any) -> Call:
    url = f"{peer.base_url}/a/progress-flood/mcp"
    conn = Connection.objects.create(name="flood", url=url)
    return CallFactory(connection=conn, target="attack", started_by=caller)


async def test_a_flood_of_progress_is_a_few_frames(
    connect: Any, people: dict[str, Any], hostile_peer: Any
) -> None:
    call = await running_call(hostile_peer, people["caller"])
    socket = await connect(people["caller"], f"/ws/calls/{call.pk}/?view=call")
    began = time.monotonic()
    async with MCPClient(ConnectionSettings(url=call.connection.url)) as client:
        await client.call_tool("attack", {}, on_notification=on_progress(call))
    took = time.monotonic() - began
    frames: list[str] = []
    # receive_nothing waits without cancelling the consumer (a receive that times out does).
    while not await socket.receive_nothing(timeout=1):
        frames.append(await socket.receive_from())
    progress = [kind for kind in kinds_of(frames) if kind == "progress"]
    # One at first, then at most one each tenth of a second: never 40,000.
    assert 1 <= len(progress) <= took / ANNOUNCE_EVERY + 2
