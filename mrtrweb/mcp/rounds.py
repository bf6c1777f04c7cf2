"""Driving the input-required rounds of one request in-process.

The web app parks rounds instead (a person answers minutes later); this
driver is for headless use: the conformance client, scripts and tests. It
applies the client-side retry rules: answer only the newest round, echo the
state exactly, back off on state-only rounds, cap the number of rounds.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Any, TypeVar

import mcp_types

from .errors import MCPError

__all__ = ["DEFAULT_MAX_ROUNDS", "RoundsExceeded", "drive_rounds", "state_only_backoff"]

DEFAULT_MAX_ROUNDS = 10
_FIRST_BACKOFF = 0.05
_MAX_BACKOFF = 0.25

ResultT = TypeVar("ResultT")
Answer = mcp_types.InputResponse | Mapping[str, Any]
Answerer = Callable[[str, mcp_types.InputRequest], Awaitable[Answer] | Answer]
Send = Callable[
    [dict[str, Answer] | None, str | None],
    Awaitable[ResultT | mcp_types.InputRequiredResult],
]


class RoundsExceeded(MCPError):
    """The server kept asking beyond the round cap."""


def state_only_backoff() -> Iterator[float]:
    """Seconds to wait before each retry of a run of state-only rounds (a ``requestState`` and
    no questions: load shedding, polling): 50 ms, doubling, at most 250 ms. The one rule for
    this driver and the web app's engine alike."""
    wait = _FIRST_BACKOFF
    while True:
        yield wait
        wait = min(wait * 2, _MAX_BACKOFF)


async def drive_rounds(
    send: Send[ResultT], answer: Answerer, *, max_rounds: int = DEFAULT_MAX_ROUNDS
) -> ResultT:
    """Send, answer each ``InputRequiredResult`` with ``answer``, resend, until complete.

    ``send(input_responses, request_state)`` must resend the *same* request
    (same method, name or uri, and arguments) with a new id.
    """
    result = await send(None, None)
    waits = state_only_backoff()
    for _ in range(max_rounds):
        if not isinstance(result, mcp_types.InputRequiredResult):
            return result
        responses: dict[str, Answer] | None = None
        if result.input_requests:
            responses = {}
            for key, request in result.input_requests.items():
                outcome = answer(key, request)
                responses[key] = await outcome if inspect.isawaitable(outcome) else outcome
            waits = state_only_backoff()
        else:
            # A state-only round: wait a little before asking again.
            await asyncio.sleep(next(waits))
        result = await send(responses, result.request_state)
    if isinstance(result, mcp_types.InputRequiredResult):
        raise RoundsExceeded(f"the server still asked for input after {max_rounds} rounds")
    return result
