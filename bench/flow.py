"""Queries and CPU per flow: what one person's whole flow costs this process.

One flow is what a person does with the bench tool: the start POST (which sends the call and
parks its round), the round page GET, the answer POST, and the delivery of that answer to the
bench server until the result is stored. It runs in the bench process with Django's test
client (CSRF checked, as a browser's requests are), warm, ``repeats`` times; each phase's SQL
queries are counted and its CPU time (``time.process_time``: every thread of the process, the
shared MCP event loop included) measured. Not in the same flow: counting the queries puts
Django's debug cursor on the connection, which times and formats every statement (on SQLite
it even runs one more, to quote the parameters), work the app does not do in production. Each
repeat is a counted flow and a timed one, uncounted.

The engine sends a started call and a taken answer on a delivery thread of the process that
took it (calls/handoff.py). Here that work runs inline instead, at the moment the thread would
start, so that its queries are counted on this connection and set apart from the request's:
``start`` is the start POST plus the sending of the call, ``delivery`` the resubmission of the
answer. Everything else runs as in production: the safety-net tasks are written to the task
queue (and found already done by the stack's worker later; those later runs are not counted),
and live updates go to a running event loop of their own, as they go to the web server's
(without one, each would start an event loop in a new thread, which no web process does).

``--list`` (or the suite's ``sql_dir``) writes every query of one flow, by phase, to a text
file beside the JSON, so that anyone can see what to cut.

What holds the targets back is measured in the same run, the same way: the **floor flow** is
the flow's three requests (start POST, page GET, answer POST) made by the same client to the
Django floor's trivial view (``bench/urls.py``), which only signs the person in; its queries
and CPU are what any three pages of the app cost before they do anything. And the flow's
queries are sorted by what makes them (:func:`kinds`): each request's sign-in (the session,
the user with their permissions), the transactions' own ``BEGIN``/``COMMIT`` statements, and the
app's reads and writes.

    python -m bench.flow --backend sqlite [--repeats 10] [--list]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from .spending import PARTS, Spending
from .stack import CONNECTION, PERSON, TOOL

PHASES = ("start", "page", "answer", "delivery")
# The requests of the flow, made to the floor's trivial view (bench/urls.py).
FLOOR_PHASES = ("start", "page", "answer")
# What a query is for (:func:`kind_of`), in the order the table prints them.
KINDS = ("sign_in", "transaction", "app")
_SIGN_IN_TABLES = ('"django_session"', '"auth_user"', '"auth_user_user_permissions"')
# The targets for the whole flow (docs/performance.md).
TARGET_QUERIES = 20
TARGET_CPU_MS = 20.0
_WEB_LOOP = "bench-web-loop"


class Meter:
    """Splits one flow's queries and CPU time into phases: ``enter(name)`` closes the current
    phase (its queries and CPU so far are added to it) and opens ``name``."""

    def __init__(self, queries: Any = None) -> None:
        self.queries = queries  # a running CaptureQueriesContext, or None: CPU time only
        self.current: str | None = None
        self.count: dict[str, int] = {}
        self.cpu: dict[str, float] = {}
        self.sql: dict[str, list[str]] = {}
        self._cpu_mark = 0.0
        self._query_mark = 0

    def enter(self, name: str | None) -> str | None:
        now = time.process_time()
        captured = self.queries.captured_queries if self.queries is not None else []
        done = len(captured)
        if self.current is not None:
            self.cpu[self.current] = self.cpu.get(self.current, 0.0) + now - self._cpu_mark
            if self.queries is not None:
                self.count[self.current] = self.count.get(self.current, 0) + done - self._query_mark
                self.sql.setdefault(self.current, []).extend(
                    q["sql"] for q in captured[self._query_mark : done]
                )
        previous, self.current = self.current, name
        self._cpu_mark, self._query_mark = time.process_time(), done
        return previous


def kind_of(sql: str) -> str:
    """``sign_in``: the session, user and permission reads every signed-in request makes
    (Django's ``SessionMiddleware``, ``AuthenticationMiddleware``, the app's sign-in backend,
    which reads the person with their permissions, or ``ModelBackend``, which reads them apart);
    ``transaction``: a transaction's own bracket (``BEGIN``, ``COMMIT``, savepoints), which
    Django counts as queries; ``app``: everything else."""
    head = sql.lstrip("( ").upper()
    if head.startswith(("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE SAVEPOINT")):
        return "transaction"
    source = sql.split(" WHERE ", 1)[0]
    if head.startswith("SELECT") and any(f"FROM {t}" in source for t in _SIGN_IN_TABLES):
        return "sign_in"
    return "app"


def kinds(meter: Meter) -> dict[str, int]:
    """How many of ``meter``'s queries are of each of :data:`KINDS`."""
    counted = dict.fromkeys(KINDS, 0)
    for phase_sql in meter.sql.values():
        for sql in phase_sql:
            counted[kind_of(sql)] += 1
    return counted


@contextlib.contextmanager
def inline_handoff(meter_of: Callable[[], Meter | None]) -> Iterator[None]:
    """Run what the engine hands to a delivery thread at once, on this thread, metered as
    ``delivery`` (an answer) or as part of ``start`` (a call's first request)."""
    from concurrent.futures import Future

    from mrtrweb.calls import handoff
    from mrtrweb.mcp import io_loop

    original = handoff.start

    def start(work: Callable[[int], Any], pk: int) -> Future[Any]:
        future: Future[Any] = Future()
        meter = meter_of()
        phase = "delivery" if work.__name__ == "resubmit" else "start"
        previous = meter.enter(phase) if meter is not None else None
        try:
            with io_loop.attached():
                future.set_result(work(pk))
        except Exception as exc:  # as on a delivery thread: the round's status tells
            future.set_exception(exc)
        finally:
            if meter is not None:
                meter.enter(previous)
        return future

    handoff.start = start  # type: ignore[assignment]
    try:
        yield
    finally:
        handoff.start = original  # type: ignore[assignment]


def _client() -> Any:
    from django.contrib.auth import get_user_model
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(get_user_model().objects.get(username=PERSON))
    return client


def _fields(html: str) -> dict[str, str]:
    from .people import form_fields

    return form_fields(html)


class Flow:
    def __init__(self) -> None:
        self.client = _client()
        self.start_url = f"/calls/start/{CONNECTION}/?tool={TOOL}"
        page = self.client.get(self.start_url)
        if page.status_code != 200:
            raise RuntimeError(f"start page: {page.status_code}")
        self.start_fields = _fields(page.content.decode())
        self.answer_fields: dict[str, str] | None = None
        self.meter: Meter | None = None

    def _post(self, url: str, data: dict[str, str]) -> Any:
        token = self.client.cookies["csrftoken"].value
        return self.client.post(url, {**data, "csrfmiddlewaretoken": token})

    def once(self, counted: bool = True) -> Meter:
        """One flow, its queries counted (``counted``) or only its CPU time measured."""
        from mrtrweb.calls.models import Round

        with _captured(counted) as queries:
            meter = self.meter = Meter(queries)
            meter.enter("start")
            response = self._post(self.start_url, self.start_fields)
            location = response.headers.get("Location", "")
            if response.status_code != 303 or "/rounds/" not in location:
                raise RuntimeError(f"start did not park a round: {response.status_code} {location}")
            meter.enter("page")
            page = self.client.get(location)
            if page.status_code != 200:
                raise RuntimeError(f"round page: {page.status_code}")
            if self.answer_fields is None:
                self.answer_fields = {**_fields(page.content.decode()), "action": "accept"}
            meter.enter("answer")
            answered = self._post(location, self.answer_fields)
            meter.enter(None)
            self.meter = None
        if answered.status_code != 303:
            raise RuntimeError(f"answer refused: {answered.status_code}")
        round_id = int(location.rstrip("/").rsplit("/", 1)[1])
        call = Round.objects.select_related("call").get(pk=round_id).call
        if call.status != "completed":
            raise RuntimeError(f"the flow's call ended {call.status}: {call.error}")
        return meter

    def floor(self, counted: bool = True) -> Meter:
        """The flow's three requests, made to the Django floor's trivial view: what they
        cost before the app does anything (the same client, session and CSRF check)."""
        from .django_floor import FLOOR_PATH

        with _captured(counted) as queries:
            meter = Meter(queries)
            for phase in FLOOR_PHASES:
                meter.enter(phase)
                if phase == "page":
                    response = self.client.get(FLOOR_PATH)
                    expected = 200
                else:
                    response = self._post(FLOOR_PATH, {})
                    expected = 303
                if response.status_code != expected:
                    raise RuntimeError(f"the floor's {phase}: {response.status_code}")
            meter.enter(None)
        return meter


@contextlib.contextmanager
def _captured(counted: bool) -> Iterator[Any]:
    """The connection's queries captured (``CaptureQueriesContext``), or None when not
    ``counted``."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    if not counted:
        yield None
        return
    with CaptureQueriesContext(connection) as queries:
        yield queries


@contextlib.contextmanager
def web_loop() -> Iterator[None]:
    """A running event loop that live updates are sent through, as a web server's is
    (``live.events.remember_web_loop``, which the ASGI app calls when it starts serving)."""
    import asyncio

    from mrtrweb.live import events

    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name=_WEB_LOOP, daemon=True)
    thread.start()
    events.remember_web_loop(loop)
    try:
        yield
    finally:
        events.remember_web_loop(None)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=5)
        loop.close()


def _loop_threads() -> dict[str, threading.Thread | None]:
    """The threads of the shared MCP event loop and of the live updates' loop (web_loop)."""
    by_name = {thread.name: thread for thread in threading.enumerate()}
    return {"mcp_loop": by_name.get("mrtrweb-mcp-io"), "live_loop": by_name.get(_WEB_LOOP)}


def measure(
    context: dict[str, Any] | None = None, repeats: int = 20, sql_path: Path | None = None
) -> dict[str, Any]:
    """Run ``repeats`` warm flows; figures per phase (median over the flows) and in total:
    the queries of counted flows, the CPU time of as many uncounted ones."""
    flow = Flow()
    meters: list[Meter] = []
    timed: list[Meter] = []
    floors: list[Meter] = []
    floors_timed: list[Meter] = []
    spending = Spending()
    with web_loop(), inline_handoff(lambda: flow.meter):
        for _ in range(3):  # warm: imports, templates, caches, the MCP connection
            flow.once()
            flow.floor()
        for _ in range(repeats):  # interleaved, so all of them see the same machine
            meters.append(flow.once())
            timed.append(flow.once(counted=False))
            with spending.measuring(_loop_threads()):
                flow.once(counted=False)
            floors.append(flow.floor())
            floors_timed.append(flow.floor(counted=False))

    def median(values: list[float]) -> float:
        return float(statistics.median(values))

    queries = {p: median([m.count.get(p, 0) for m in meters]) for p in PHASES}
    cpu = {p: median([m.cpu.get(p, 0.0) * 1000.0 for m in timed]) for p in PHASES}
    totals_q = [sum(m.count.values()) for m in meters]
    totals_cpu = [sum(m.cpu.values()) * 1000.0 for m in timed]
    figures: dict[str, Any] = {
        "flows": repeats,
        "queries": {**queries, "total": median(totals_q)},
        "queries_max_total": max(totals_q),
        "queries_by_kind": {k: median([kinds(m)[k] for m in meters]) for k in KINDS},
        "cpu_ms": {**cpu, "total": median(totals_cpu)},
        # The counted flows' CPU: what counting the queries costs on top (not the app's).
        "cpu_ms_counted_total": median([sum(m.cpu.values()) * 1000.0 for m in meters]),
        "target_queries": TARGET_QUERIES,
        "target_cpu_ms": TARGET_CPU_MS,
        # Where the CPU goes (bench/spending.py), in flows of their own.
        "cpu_spent_ms": spending.per_flow_ms(repeats),
        # The same three requests to the trivial view: what the app cannot go below.
        "floor": {
            "queries": median([sum(m.count.values()) for m in floors]),
            "cpu_ms": median([sum(m.cpu.values()) * 1000.0 for m in floors_timed]),
        },
    }
    if sql_path is not None:
        figures["sql_list"] = str(_write_sql(meters[-1], sql_path))
    return figures


def _write_sql(meter: Meter, path: Path) -> Path:
    lines = []
    for phase in PHASES:
        sql = meter.sql.get(phase, [])
        lines.append(
            f"== {phase}: {len(sql)} queries, "
            f"{meter.cpu.get(phase, 0) * 1000:.1f} ms CPU while counted"
        )
        lines += [f"{n:3d}  {q}" for n, q in enumerate(sql, 1)]
        lines.append("")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines))
    return path


def rows(flow: dict[str, Any]) -> list[tuple[str, str]]:
    """The table's lines (bench/run.py)."""
    if not flow or "queries" not in flow:
        return [("Flow: queries and CPU", (flow or {}).get("error", "-"))]
    q, cpu = flow["queries"], flow["cpu_ms"]
    floor = flow.get("floor")
    return [
        (
            "Flow: SQL queries (start/page/answer/delivery)",
            "/".join(f"{q[p]:g}" for p in PHASES)
            + f" = {q['total']:g} (target <= {flow['target_queries']})",
        ),
        (
            "Flow:   sign-in / BEGIN-COMMIT / the app's",
            " / ".join(f"{flow.get('queries_by_kind', {}).get(k, 0):g}" for k in KINDS),
        ),
        (
            "Flow: CPU ms (start/page/answer/delivery)",
            "/".join(f"{cpu[p]:.1f}" for p in PHASES)
            + f" = {cpu['total']:.1f} (target <= {flow['target_cpu_ms']:g})"
            + (
                f"; {flow['cpu_ms_counted_total']:.1f} while its queries are counted"
                if "cpu_ms_counted_total" in flow
                else ""
            ),
        ),
        (
            "Flow: CPU ms by what spends it",
            " / ".join(f"{label} {flow['cpu_spent_ms'][part]:.1f}" for part, label in PARTS.items())
            if "cpu_spent_ms" in flow
            else "-",
        ),
        (
            "Flow floor: its 3 requests to the trivial view: queries; CPU ms",
            f"{floor['queries']:g}; {floor['cpu_ms']:.1f}" if floor else "-",
        ),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--list", action="store_true", help="print every query, by phase")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args(argv)

    from . import seed
    from .stack import stack

    with stack(args.backend, worker_mode="inprocess", worker_interval=0.05) as run:
        seed.setup_django()
        seed.prepare(run.mcp_url)
        out = (args.json or Path(run.workdir) / "flow.json").with_name(
            f"flow-{args.backend}-sql.txt"
        )
        figures = measure(repeats=args.repeats, sql_path=out)
        if args.list:
            print(Path(figures["sql_list"]).read_text())
    for label, value in rows(figures):
        print(f"{label}: {value}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
