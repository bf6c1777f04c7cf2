"""P4: from the result being stored to a websocket client hearing of it.

The client is the person's browser: it opens ``/ws/calls/<id>/`` with the session cookie and
an allowed ``Origin``, the person answers, and the frame whose outer element carries
``data-live-kind="completed"`` is the update. Latency is the arrival time minus the call's
``finished_at`` (stored by the engine) and minus the frame's ``data-live-at`` (published).
"""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any

from .people import Person
from .stack import Stack
from .stats import summary

# What a frame says of itself (frames.py): its kind and when it was published.
KIND = re.compile(r'data-live-kind="([^"]*)"')
AT = re.compile(r'data-live-at="([0-9.]+)"')
NOT_AVAILABLE = "n/a (no live consumer)"


async def open_socket(
    run: Stack, session_key: str, path: str, *, open_timeout: float = 10, **options: Any
) -> Any:
    """A websocket to ``path`` opened as the browser of that session opens it: its session
    cookie and the site's Origin. ``options`` go to ``websockets.connect``."""
    import websockets

    url = run.app_url.replace("http://", "ws://") + path
    return await websockets.connect(
        url,
        additional_headers={"Cookie": f"sessionid={session_key}", "Origin": run.app_url},
        open_timeout=open_timeout,
        **options,
    )


async def _completed_frame(socket: Any, limit: float = 30.0) -> tuple[float, float | None]:
    deadline = time.monotonic() + limit
    while True:
        frame = await asyncio.wait_for(socket.recv(), max(deadline - time.monotonic(), 0.01))
        arrived = time.time()
        text = frame if isinstance(frame, str) else frame.decode()
        kind = KIND.search(text)
        if kind and kind.group(1) == "completed":
            at = AT.search(text)
            return arrived, float(at.group(1)) if at else None


async def measure(run: Stack, repeats: int, person: Person) -> dict[str, Any]:
    from asgiref.sync import sync_to_async

    from mrtrweb.calls.models import Call

    finished_at = sync_to_async(
        lambda pk: Call.objects.values_list("finished_at", flat=True).get(pk=pk).timestamp(),
        thread_sensitive=True,
    )
    stored, published = [], []
    for attempt in range(repeats):
        call_id, round_id = await person.start()
        try:
            socket = await open_socket(run, person.session_cookie, f"/ws/calls/{call_id}/")
        except Exception as exc:
            if attempt == 0:
                await person.answer(round_id)  # leave no pending round behind for P3
                return {"status": NOT_AVAILABLE, "why": f"{type(exc).__name__}: {exc}"[:300]}
            raise
        try:
            # Listening while the answer is posted, as the browser's page does: the frame's
            # arrival is stamped when it comes, not once the POST's own response is read.
            heard = asyncio.create_task(_completed_frame(socket))
            try:
                await person.answer(round_id)
                arrived, at = await heard
            finally:
                heard.cancel()
        finally:
            await socket.close()
        stored.append((arrived - await finished_at(call_id)) * 1000)
        if at is not None:
            published.append((arrived - at) * 1000)
    return {
        "status": "ok",
        "stored_to_received": summary(stored, "ms"),
        "published_to_received": summary(published, "ms"),
        "target_p50_ms": 50,
    }
