"""Progress a server streams while it works on an answer reaches the call's pages, in order."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest
from channels.db import database_sync_to_async

from mrtrweb.calls import engine
from mrtrweb.calls.models import Call
from mrtrweb.servers.models import Connection

from .conftest import LIVE_AT, frames_until, kinds_of

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("layer")]

BAR = re.compile(r'<progress id="live-progress-\d+-bar" max="(\d+)" value="(\d+)">')


@pytest.fixture
def progress_peer(peer_factory: Any) -> Any:
    return peer_factory("tests.live.progress_peer")


async def test_progress_of_a_resubmission_arrives_in_order_and_escaped(
    connect: Any, people: dict[str, Any], progress_peer: Any, inline_tasks: None
) -> None:
    caller = people["caller"]

    @database_sync_to_async
    def start() -> Call:
        conn = Connection.objects.create(name="progress", url=progress_peer.url)
        return engine.start_call(
            connection=conn,
            method=Call.Method.TOOL,
            target="confirm_then_work",
            arguments={"steps": 3, "delay": 0.2},
            user=caller,
        )

    call = await start()
    assert call.status == Call.Status.WAITING
    socket = await connect(caller, f"/ws/calls/{call.pk}/?view=call")
    mark = progress_peer.mark()

    await database_sync_to_async(engine.answer)(
        await database_sync_to_async(call.rounds.get)(),
        {"confirm": {"action": "accept", "content": {"go": True}}},
        caller,
    )

    frames = await frames_until(socket, "completed")
    assert kinds_of(frames) == [
        "answered",
        "progress",
        "progress",
        "progress",
        "delivered",
        "completed",
    ]
    progress = frames[1:4]
    assert [BAR.search(f).groups() for f in progress] == [("3", "1"), ("3", "2"), ("3", "3")]
    for step, frame in enumerate(progress, start=1):
        assert frame.startswith(f'<div id="live-progress-{call.pk}" class="live-progress"')
        # The server's message is shown as text, never as markup.
        assert f"&lt;b&gt;step&lt;/b&gt; {step} of 3" in frame and "<b>" not in frame
        # The bar is labelled for assistive technology.
        assert f'<label for="live-progress-{call.pk}-bar">Progress</label>' in frame
    stamps = [float(LIVE_AT.search(f).group(1)) for f in frames]
    assert stamps == sorted(stamps) and stamps[-1] <= time.time()
    # The server saw a progress token on the resubmission: that is what asked for progress.
    retry = [e for e in progress_peer.recorded(since=mark) if e["json"]]
    assert retry and retry[-1]["json"]["params"]["_meta"].get("progressToken")
