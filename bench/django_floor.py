"""What Django itself costs, beside the app and the MCP floor: the best P1 and P2 could reach.

Two trivial endpoints on the same uvicorn process as the app, in the same run:

- ``/bench-floor/`` (bench/urls.py, served through bench/settings.py): a view behind the app's
  whole middleware stack that only checks ``request.user.is_authenticated`` and answers a POST
  with a 303, as the round form's POST is answered. Its cost is the least any Django page of
  this app can cost: the **Django floor**.
- ``/bench-bare/``: answered by :func:`application` (the ASGI app uvicorn serves in the bench)
  before Django sees the request: the cost of uvicorn and the HTTP round trip alone.

P1 floor: the floor POST, timed exactly like the app's answer POST (same person, session
cookie, CSRF token, form body), interleaved with the raw retry; ``(floor + raw) / raw`` is the
best ``app / raw`` a Django app could reach if it did nothing but receive the POST and make the
retry. P2 floor: P2's flow (start POST, round page GET, answer POST) against the floor view plus
the direct client's two MCP requests, with P2's concurrency; ``floor flows/s / direct`` is the
best ``app / direct`` a Django app could reach.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import TYPE_CHECKING, Any

from .floor import RawClient
from .plans import Plan
from .procfs import cpu_seconds
from .stack import TOOL
from .stats import ratio, summary

if TYPE_CHECKING:
    from .people import Person
    from .stack import Stack

FLOOR_PATH = "/bench-floor/"
BARE_PATH = "/bench-bare/"

# -- the ASGI app uvicorn serves in the bench -----------------------------------------------

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

_app: Callable[[Scope, Receive, Send], Awaitable[None]] | None = None


async def _bare(receive: Receive, send: Send) -> None:
    # Read the whole body, as Django does before a view runs, then a 303 with no body.
    while True:
        message = await receive()
        if message["type"] != "http.request" or not message.get("more_body"):
            break
    await send(
        {
            "type": "http.response.start",
            "status": 303,
            "headers": [(b"location", BARE_PATH.encode()), (b"content-length", b"0")],
        }
    )
    await send({"type": "http.response.body", "body": b""})


async def application(scope: Scope, receive: Receive, send: Send) -> None:
    """``mrtrweb.asgi.application`` (lifespan, HTTP, websockets) with ``/bench-bare/`` in front.

    The app is imported on the first call (the lifespan startup), not when this module is
    imported: the bench process imports it too, and must not set Django up through it.
    """
    global _app
    if scope["type"] == "http" and scope["path"] == BARE_PATH:
        await _bare(receive, send)
        return
    if _app is None:
        from mrtrweb.asgi import application as app

        _app = app
    await _app(scope, receive, send)


# -- what a person sends ---------------------------------------------------------------------


def _form(person: Person) -> dict[str, str]:
    # The answer form's own fields (learnt by the person's earlier rounds), as it posts them.
    return {**(person._answer_fields or {}), "action": "accept"}


async def _post(person: Person, path: str, expected: int) -> None:
    response = await person._post(path, _form(person))
    if response.status_code != expected:
        raise RuntimeError(f"POST {path}: {response.status_code} {response.text[:300]}")


async def _get(person: Person, path: str, expected: int = 200) -> None:
    response = await person.http.get(path)
    if response.status_code != expected:
        raise RuntimeError(f"GET {path}: {response.status_code} {response.text[:300]}")


def _ms(seconds: list[float]) -> list[float]:
    return [s * 1000.0 for s in seconds]


def _best(floor: dict[str, Any], raw: dict[str, Any]) -> float | None:
    """``(floor + raw) / raw`` of the medians."""
    a, b = floor.get("median"), raw.get("median")
    if a is None or not b:
        return None
    return (a + b) / b


# -- P1 --------------------------------------------------------------------------------------


async def p1_floor(run: Stack, plan: Plan, person: Person) -> dict[str, Any]:
    """Median floor POST, bare POST and raw retry, sampled in turn so noise hits all three."""
    repeats = plan.latency_repeats * 3  # each sample is a few ms: more of them, steadier
    raw_client = RawClient(run.mcp_url, connections=1)
    django, bare, raw = [], [], []
    try:
        # Warm the view up (URL resolver, first thread) before the clock runs.
        await _get(person, FLOOR_PATH)
        await _post(person, FLOOR_PATH, 303)
        for _ in range(repeats):
            # As for the answer: the page is opened first (CSRF cookie, session), not timed.
            await _get(person, FLOOR_PATH)
            started = time.perf_counter()
            await _post(person, FLOOR_PATH, 303)
            django.append(time.perf_counter() - started)

            started = time.perf_counter()
            await _post(person, BARE_PATH, 303)
            bare.append(time.perf_counter() - started)

            raw.append(await raw_client.timed_retry(TOOL))
    finally:
        await raw_client.close()
    figures: dict[str, Any] = {
        "django": summary(_ms(django), "ms"),
        "bare": summary(_ms(bare), "ms"),
        "raw": summary(_ms(raw), "ms"),
    }
    figures["django_over_raw"] = ratio(figures["django"], figures["raw"])
    figures["best_ratio_raw"] = _best(figures["django"], figures["raw"])
    figures["best_ratio_raw_bare"] = _best(figures["bare"], figures["raw"])
    figures["target_ratio_raw"] = 1.5
    return figures


# -- P2 --------------------------------------------------------------------------------------


async def _flows(
    people: list[Person], flows: int, path: str | None, client: RawClient | None
) -> float:
    """Flows/s of P2's person flow with every page replaced by ``path`` (None: no HTTP to the
    app) and, with ``client``, the direct client's two MCP requests (call, retry)."""

    async def one(person: Person) -> None:
        for _ in range(flows):
            if path is not None:
                await _post(person, path, 303)  # start the tool
            if client is not None:
                state, _requests = await client.park(TOOL)  # what the start makes the app do
            if path is not None:
                # Open the round page (the bare endpoint answers every request with a 303).
                await _get(person, path, 200 if path == FLOOR_PATH else 303)
                await _post(person, path, 303)  # answer the round
            if client is not None:
                await client.retry(TOOL, state)  # what the answer makes the worker do

    started = time.perf_counter()
    await asyncio.gather(*(one(p) for p in people))
    return len(people) * flows / (time.perf_counter() - started)


async def p2_floor(run: Stack, plan: Plan, people: list[Person]) -> dict[str, Any]:
    """With P2's concurrency (one signed-in person each): flows/s through the floor view, the
    bare endpoint, the floor view alone, and the direct client alone, measured in turn."""
    client = RawClient(run.mcp_url, connections=plan.concurrency)
    runs: dict[str, list[float]] = {"django": [], "bare": [], "django_http_only": [], "direct": []}
    flows = plan.throughput_flows
    cpu: list[float] = []
    try:
        await _flows(people, 1, FLOOR_PATH, client)  # warm-up
        for _ in range(plan.throughput_repeats):
            before = cpu_seconds(run.web_pid)
            runs["django"].append(await _flows(people, flows, FLOOR_PATH, client))
            cpu.append((cpu_seconds(run.web_pid) - before) * 1000 / (len(people) * flows))
            runs["bare"].append(await _flows(people, flows, BARE_PATH, client))
            runs["django_http_only"].append(await _flows(people, flows, FLOOR_PATH, None))
            runs["direct"].append(await _flows(people, flows, None, client))
    finally:
        await client.close()
    figures: dict[str, Any] = {
        "concurrency": len(people),
        "flows_per_person": flows,
        **{name: summary(values, "flows/s") for name, values in runs.items()},
        # The web process's CPU for each of the floor's flows (P2's web_cpu_per_round).
        "web_cpu_per_flow": summary(cpu, "ms"),
    }
    figures["best_ratio"] = ratio(figures["django"], figures["direct"])
    figures["best_ratio_bare"] = ratio(figures["bare"], figures["direct"])
    figures["target_ratio"] = 0.7
    return figures
