"""Holding a request while a call moves on, without a worker thread.

Two requests wait on a call: a program's ``GET /api/v1/calls/<id>?wait=N`` (until the call or
a round changes status) and a page without JavaScript reloading itself through
``live:next?hold=1`` (until nothing is on its way any more: the server asked, or answered).
Both look at the call's and its rounds' statuses every :data:`POLL_SECONDS` from an async view,
so a held request costs a few cheap queries a second and no thread, however long it waits.

Why hold the page's reload at all: a page reloading itself every second while a call is on
its way makes two full requests a second (``live:next``, then the call page again) for each
person waiting. With a hundred people starting calls at once on one process, those reloads
would be most of its work (``bench/starts.py``, P7), and every start would wait behind them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from asgiref.sync import sync_to_async

from .. import handoff
from ..models import Call, Round

__all__ = ["POLL_SECONDS", "Seen", "hold", "in_flight", "seen"]

# How often a held request looks at the call again: short enough to feel immediate, long
# enough that a hundred waiting requests cost a few cheap queries a second.
POLL_SECONDS = 0.25

# What a held request sees of a call: its status (None once it is gone) and each round's.
Seen = tuple[str | None, tuple[tuple[int, str], ...]]

# A round whose answers are being sent: the server's reply is on its way.
ON_ITS_WAY = (Round.Status.SUBMITTED, Round.Status.DELIVERING)


def seen(call_id: int) -> Seen:
    """The call's status and each of its rounds' (id, status), in order."""
    status = Call.objects.filter(pk=call_id).values_list("status", flat=True).first()
    rounds = Round.objects.filter(call_id=call_id).order_by("index").values_list("id", "status")
    return status, tuple(rounds)


def _look(call_id: int) -> Seen:
    """:func:`seen`, then this thread's connection back to the pool: held for seconds, a
    hundred held requests would take every connection (:func:`.handoff.release_connection`)."""
    try:
        return seen(call_id)
    finally:
        handoff.release_connection()


def in_flight(now: Seen) -> bool:
    """Whether something of the call is on its way: its request, or a round's answers (the
    one rule: the call page asks it too, :func:`mrtrweb.calls.pages.refresh.in_flight`)."""
    status, rounds = now
    return status == Call.Status.RUNNING or any(state in ON_ITS_WAY for _, state in rounds)


async def hold(call_id: int, seconds: float, moved: Callable[[Seen, Seen], bool]) -> Seen:
    """Wait up to ``seconds`` until ``moved(first, now)`` (what was seen at first, and now);
    what was seen last. ``moved`` is asked of the first look too, so a call already where the
    caller waits for it answers at once."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    first = now = await sync_to_async(_look)(call_id)
    while not moved(first, now) and (left := deadline - loop.time()) > 0:
        await asyncio.sleep(min(POLL_SECONDS, left))
        now = await sync_to_async(_look)(call_id)
    return now
