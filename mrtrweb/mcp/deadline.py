"""The time a server has to answer one request, across the whole response.

httpx's read timeout is per chunk, so a server that sends a keep-alive now and then could hold
a request (and the thread waiting on it) for ever. This deadline covers the whole exchange:
``seconds`` to the answer (an input-required result, a result or an error), extended by each
progress notification to ``seconds`` after it, but never past ``cap`` after the request left.
"""

from __future__ import annotations

import asyncio
from types import TracebackType

from .errors import DeadlineExceeded

__all__ = ["AnswerDeadline"]


class AnswerDeadline:
    """``async with AnswerDeadline(60, 600) as deadline:`` around one exchange; call
    ``deadline.progressed()`` on each progress notification. Raises :class:`DeadlineExceeded`
    when the time runs out (the exchange inside is cancelled: for HTTP, the stream is closed,
    which is how a request is cancelled). ``None`` for either means no such limit."""

    def __init__(self, seconds: float | None, cap: float | None) -> None:
        self.seconds = seconds
        self.cap = cap
        self._extended = False
        self._cap_at: float | None = None
        self._timeout: asyncio.Timeout | None = None
        self._holds = 0
        self._held_at: float | None = None

    async def __aenter__(self) -> AnswerDeadline:
        now = asyncio.get_running_loop().time()
        self._cap_at = now + self.cap if self.cap is not None else None
        self._timeout = asyncio.timeout_at(self._bounded(now))
        await self._timeout.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        assert self._timeout is not None
        try:
            await self._timeout.__aexit__(exc_type, exc, traceback)
        except TimeoutError as expired:
            raise self._error() from expired

    def progressed(self) -> None:
        """The server reported progress: it has ``seconds`` more, up to the cap."""
        if self._timeout is None or self.seconds is None:
            return
        when = self._bounded(asyncio.get_running_loop().time())
        current = self._timeout.when()
        if when is not None and (current is None or when > current):
            self._timeout.reschedule(when)
            self._extended = True

    def hold(self) -> None:
        """The server waits on us (a question a person answers): stop the clock, cap included,
        until :meth:`release`. Holds nest; whoever holds bounds the wait."""
        if self._timeout is None:
            return
        self._holds += 1
        if self._holds == 1:
            self._held_at = asyncio.get_running_loop().time()
            self._timeout.reschedule(None)

    def release(self) -> None:
        """The answer went back: the server has ``seconds`` again, and the cap moves on by the
        time it was held."""
        if self._timeout is None or self._holds == 0:
            return
        self._holds -= 1
        if self._holds:
            return
        now = asyncio.get_running_loop().time()
        if self._cap_at is not None and self._held_at is not None:
            self._cap_at += now - self._held_at
        self._held_at = None
        try:
            self._timeout.reschedule(self._bounded(now))
        except RuntimeError:
            # The request it bounded is over already (the server answered it while a question
            # was held, e.g. it gave the question up): there is nothing left to bound.
            self._timeout = None

    def _bounded(self, now: float) -> float | None:
        when = now + self.seconds if self.seconds is not None else None
        if self._cap_at is not None:
            when = self._cap_at if when is None else min(when, self._cap_at)
        return when

    def _error(self) -> DeadlineExceeded:
        assert self._timeout is not None
        if self._extended and self._timeout.when() == self._cap_at:
            return DeadlineExceeded(
                f"The server did not finish within {self.cap:g} s, the longest its progress "
                "notifications may extend the deadline to",
                seconds=self.cap,
            )
        if self._extended:
            return DeadlineExceeded(
                f"The server did not answer within {self.seconds:g} s of its last progress "
                "notification",
                seconds=self.seconds,
            )
        limits = [s for s in (self.seconds, self.cap) if s is not None]
        first = min(limits) if limits else 0.0
        return DeadlineExceeded(f"The server did not answer within {first:g} s", seconds=first)
