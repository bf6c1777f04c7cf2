"""The sockets' database checks, taken to the database thread together.

Every socket checks its person's session (and, on a call page, that they still see the call)
before it sends anything. One event for 500 people is 500 such checks at once; each on its
own hop to the database thread costs a thread handoff and, with ``CONN_MAX_AGE`` 0, a database
connection opened and closed (``database_sync_to_async`` closes it before and after): it would
be most of the CPU an event costs the web process (P6).

:func:`checked` runs the same check, still after the message arrived, but in one
``database_sync_to_async`` call with every other check asked for meanwhile on this event loop:
the first one asked waits one turn of the loop for the others, and while a batch runs the next
gathers. A check is a function of a list of items returning one result per item, so that it
can read the rows of all its items at once; each caller gets its own item's result.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable
from typing import Any

from channels.db import database_sync_to_async

Many = Callable[[list[Any]], list[Any]]
_Job = tuple[Many, Any, "asyncio.Future[Any]"]


class _Batch:
    def __init__(self) -> None:
        self.waiting: list[_Job] = []
        self.running = False

    async def run(self, function: Many, item: Any) -> Any:
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.waiting.append((function, item, future))
        if not self.running:
            self.running = True
            asyncio.get_running_loop().create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        jobs: list[_Job] = []
        try:
            # One turn of the loop: every consumer woken by the same event asks first.
            await asyncio.sleep(0)
            while self.waiting:
                jobs, self.waiting = self.waiting, []
                try:
                    outcomes = await database_sync_to_async(_run_all)(jobs)
                except Exception as exc:  # the handoff itself failed: every job learns it
                    outcomes = [(False, exc)] * len(jobs)
                for (_, _, future), (ok, value) in zip(jobs, outcomes, strict=True):
                    if future.done():
                        continue  # its socket went away meanwhile
                    if ok:
                        future.set_result(value)
                    else:
                        future.set_exception(value)
                jobs = []
        finally:
            self.running = False
            # Anything still owed (only if the drain was cancelled: the loop is closing).
            for _, _, future in [*jobs, *self.waiting]:
                if not future.done():
                    future.cancel()
            self.waiting = []


def _run_all(jobs: list[_Job]) -> list[tuple[bool, Any]]:
    """Each function once, with its items in the order asked; one (ok, result) per job."""
    by_function: dict[Many, list[int]] = {}
    for index, (function, _, _) in enumerate(jobs):
        by_function.setdefault(function, []).append(index)
    outcomes: list[tuple[bool, Any]] = [(False, None)] * len(jobs)
    for function, indexes in by_function.items():
        try:
            results = function([jobs[i][1] for i in indexes])
            if len(results) != len(indexes):
                raise RuntimeError(f"{function!r} gave {len(results)} results for {len(indexes)}")
            for i, result in zip(indexes, results, strict=True):
                outcomes[i] = (True, result)
        except Exception as exc:
            for i in indexes:
                outcomes[i] = (False, exc)
    return outcomes


# One batch per event loop (tests run several loops; the in-memory layer's queues belong to one).
_batches: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Batch] = weakref.WeakKeyDictionary()


async def checked(function: Many, item: Any) -> Any:
    """``function([item, ...])``'s result for ``item``, on the database thread, together with
    the other checks waiting."""
    loop = asyncio.get_running_loop()
    batch = _batches.get(loop)
    if batch is None:
        batch = _batches[loop] = _Batch()
    return await batch.run(function, item)
