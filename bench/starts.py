"""P7, starting calls: many people start calls at once on one web process.

Each start is what a browser without JavaScript does: POST the start form, follow the 303;
where it lands on the call page while the call is on its way (the waiting page), honour the
page's ``<noscript><meta http-equiv="refresh">``, waiting as long as it says and loading what
it names, and follow redirects, until the round page is there. The clock runs from just
before the POST until the round page's response. A single start, measured alone in the same
run (several times, the median), is the baseline; the target is p95 of the crowd ≤ 3x it.

The rounds those starts park are cancelled in the database afterwards (no server is told: it
keeps nothing), so the pages measured later (P3) see only the rounds they seed.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx

from .people import Person
from .procfs import cpu_seconds
from .stack import PASSWORD, PERSON, Stack
from .stats import summary

# A start that has not reached its round in this long counts as not reached.
LIMIT_SECONDS = 120.0
# Trivial signed-in GETs (the Django floor's view) whose web CPU is measured beside the crowd.
FLOOR_REQUESTS = 300


class Outcome:
    """One start: how long until the round page, and whether a person had to click."""

    def __init__(self) -> None:
        self.seconds: float | None = None
        self.round_id: int | None = None
        # Clicks on the call page's "Answer round" button (it had stopped refreshing itself).
        self.clicks = 0
        self.error: str | None = None
        self.direct = False  # the start's 303 led straight to the round


async def start_to_round(person: Person) -> Outcome:
    """Start the bench tool as a browser without JavaScript, until its round page is shown."""
    outcome = Outcome()
    path, fields = await person.start_form()
    began = time.perf_counter()
    try:
        response = await person.post(path, fields)
        if response.status_code != 303:
            raise RuntimeError(f"start answered {response.status_code}")
        location = response.headers["location"].removeprefix(person.base_url)
        outcome.direct = location.startswith("/rounds/")
        round_id, outcome.clicks = await person.follow_to_round(location, began + LIMIT_SECONDS)
        page = await person.http.get(f"/rounds/{round_id}/")
        page.raise_for_status()
        outcome.seconds = time.perf_counter() - began
        outcome.round_id = round_id
    except (RuntimeError, TimeoutError, httpx.HTTPError, KeyError) as exc:
        outcome.error = f"{type(exc).__name__}: {exc}"[:300]
    return outcome


async def _signed_in(run: Stack, count: int) -> list[Person]:
    people = [Person(run.app_url, PERSON, PASSWORD) for _ in range(count)]
    # A few sign-ins at a time: each hashes the password (tens of ms of CPU).
    gate = asyncio.Semaphore(4)

    async def sign_in(person: Person) -> None:
        async with gate:
            await person.login()
            await person.start_form()

    await asyncio.gather(*(sign_in(p) for p in people))
    return people


def _cancel(round_ids: list[int]) -> None:
    """Take the crowd's rounds out of everyone's lists (the figures after this see only their
    own rounds). Straight in the database: the bench server keeps nothing to tell."""
    from mrtrweb.calls.models import Call, Round

    rounds = Round.objects.filter(pk__in=round_ids, status=Round.Status.PENDING)
    call_ids = list(rounds.values_list("call_id", flat=True))
    rounds.update(status=Round.Status.CANCELLED)
    Call.objects.filter(pk__in=call_ids).update(status=Call.Status.CANCELLED)


def _figures(outcomes: list[Outcome]) -> dict[str, Any]:
    reached = [o.seconds * 1000.0 for o in outcomes if o.seconds is not None]
    errors = sorted({o.error for o in outcomes if o.error})
    return {
        "starts": len(outcomes),
        "reached": len(reached),
        "direct": sum(o.direct for o in outcomes),
        "clicks": sum(o.clicks for o in outcomes),
        "errors": len([o for o in outcomes if o.error]),
        "error_kinds": errors[:5],
        "time": summary(reached, "ms") if reached else None,
    }


async def measure(run: Stack, people_count: int, per_person: int, single_repeats: int) -> dict:
    """P7: ``people_count`` people each start ``per_person`` calls at once; a single start
    measured alone (``single_repeats`` times) before and after the crowd is the baseline."""
    from asgiref.sync import sync_to_async

    people = await _signed_in(run, people_count)
    try:
        single: list[Outcome] = []
        for _ in range(single_repeats):
            single.append(await start_to_round(people[0]))
        cpu_before = cpu_seconds(run.web_pid)
        crowd_began = time.perf_counter()
        crowd = await asyncio.gather(
            *(start_to_round(person) for person in people for _ in range(per_person))
        )
        crowd_seconds = time.perf_counter() - crowd_began
        cpu_crowd = cpu_seconds(run.web_pid) - cpu_before
        for _ in range(single_repeats):
            single.append(await start_to_round(people[0]))
        floor_cpu_ms = await _floor_cpu_ms(run, people[0])
    finally:
        await asyncio.gather(*(p.close() for p in people))
    await sync_to_async(_cancel, thread_sensitive=True)(
        [o.round_id for o in [*single, *crowd] if o.round_id is not None]
    )
    figures: dict[str, Any] = {
        "people": people_count,
        "per_person": per_person,
        "single": _figures(single),
        "crowd": _figures(list(crowd)),
        "target_ratio_p95": 3.0,
        "crowd_seconds": crowd_seconds,
        # What holds the crowd back: one process does every start's work (the view, the
        # send, the round page) on a GIL, so the last start waits for about all of it.
        "web_cpu_ms_per_start": cpu_crowd * 1000.0 / max(len(crowd), 1),
        # What one trivial signed-in page costs the same process: the least a start's three
        # or more requests could cost together.
        "floor_cpu_ms_per_request": floor_cpu_ms,
    }
    if figures["crowd"]["errors"] or figures["single"]["errors"]:
        figures["web_log_errors"] = _logged_errors(run)
    single_time, crowd_time = figures["single"]["time"], figures["crowd"]["time"]
    if single_time and crowd_time:
        figures["ratio_p95"] = crowd_time["p95"] / single_time["median"]
    if single_time and crowd:
        # The p95 start ends after at least 95% of the starts finished, all their work done
        # by one interpreter (one GIL): p95 >= that many times a start's CPU. So the target
        # (p95 <= 3x one start) asks at most this much web CPU a start.
        finished_before = max(int(len(crowd) * 0.95), 1)
        figures["cpu_budget_ms_per_start"] = (
            figures["target_ratio_p95"] * single_time["median"] / finished_before
        )
    return figures


async def _floor_cpu_ms(run: Stack, person: Person) -> float:
    """Web CPU of one trivial signed-in GET (the Django floor's view), measured over HTTP."""
    from .django_floor import FLOOR_PATH

    for _ in range(20):  # warm
        (await person.http.get(FLOOR_PATH)).raise_for_status()
    before = cpu_seconds(run.web_pid)
    for _ in range(FLOOR_REQUESTS):
        (await person.http.get(FLOOR_PATH)).raise_for_status()
    return (cpu_seconds(run.web_pid) - before) * 1000.0 / FLOOR_REQUESTS


def _logged_errors(run: Stack) -> list[str]:
    """The last error lines the web process logged (why a start answered 500)."""
    web = run.children.get("web")
    if web is None:
        return []
    lines = web.output().splitlines()
    return [line[:300] for line in lines if "Error" in line or "error" in line][-10:]
