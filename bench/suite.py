"""Every figure for one database backend, measured in one process against one stack.

Run by :mod:`bench.run` as ``python -m bench.suite --backend sqlite --json OUT [...]``: each
backend gets a process of its own, because Django's settings (the database) are fixed once
set up. The order matters: storage (P5) is measured first, on a fresh database whose pages
hold no free space from earlier updates; the 100,000 seeded rounds (P3) come last.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from . import django_floor, pages
from .floor import RawClient, fastmcp_rounds
from .people import Person
from .phases import guarded, phase
from .plans import PLANS, Plan
from .procfs import cpu_seconds, rss_kb
from .stack import PASSWORD, PERSON, TOOL, Stack, inprocess_worker_supported, stack
from .stats import ratio, summary

# -- helpers -------------------------------------------------------------------------------


class Completions:
    """Learns when calls finish by reading their status (one query for all outstanding ones),
    and reports the ``finished_at`` the engine stored: the moment the result was stored."""

    def __init__(self, interval: float = 0.005) -> None:
        self.interval = interval
        self.waiting: dict[int, asyncio.Future[float]] = {}
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Completions:
        self._task = asyncio.create_task(self._poll())
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    async def wait(self, call_id: int, limit: float = 60.0) -> float:
        future = self.waiting[call_id] = asyncio.get_running_loop().create_future()
        try:
            return await asyncio.wait_for(future, limit)
        finally:
            self.waiting.pop(call_id, None)

    async def _poll(self) -> None:
        from asgiref.sync import sync_to_async

        finished = sync_to_async(_finished, thread_sensitive=True)
        while True:
            if self.waiting:
                for call_id, (status, at) in (await finished(list(self.waiting))).items():
                    future = self.waiting.get(call_id)
                    if future is None or future.done():
                        continue
                    if status == "completed":
                        future.set_result(at)
                    else:
                        future.set_exception(RuntimeError(f"call {call_id} ended {status}"))
            await asyncio.sleep(self.interval)


def _finished(ids: list[int]) -> dict[int, tuple[str, float]]:
    from mrtrweb.calls.models import Call

    rows = Call.objects.filter(pk__in=ids, status__in=Call.FINISHED).values_list(
        "pk", "status", "finished_at"
    )
    return {pk: (status, at.timestamp()) for pk, status, at in rows}


def _ms(seconds: list[float]) -> list[float]:
    return [s * 1000.0 for s in seconds]


# -- P1 ------------------------------------------------------------------------------------


async def p1_latency(run: Stack, plan: Plan, person: Person) -> dict[str, Any]:
    app, posts = [], []
    async with Completions(interval=0.005) as done:
        for _ in range(plan.latency_repeats):
            call_id, round_id = await person.start()
            started = time.time()
            await person.answer(round_id)
            posts.append(time.time() - started)
            app.append(await done.wait(call_id) - started)
    raw_client = RawClient(run.mcp_url, connections=1)
    raw = []
    try:
        for _ in range(plan.latency_repeats):
            raw.append(await raw_client.timed_retry(TOOL))
    finally:
        await raw_client.close()
    fast = await fastmcp_rounds(run.mcp_url, TOOL, plan.fastmcp_repeats)
    figures = {
        "app": summary(_ms(app), "ms"),
        "app_post": summary(_ms(posts), "ms"),
        "raw": summary(_ms(raw), "ms"),
        "fastmcp": summary(_ms(fast), "ms"),
    }
    figures["ratio_raw"] = ratio(figures["app"], figures["raw"])
    figures["ratio_fastmcp"] = ratio(figures["app"], figures["fastmcp"])
    figures["target_ratio_raw"] = 1.5
    return figures


# -- P2 ------------------------------------------------------------------------------------


async def _app_flows(people: list[Person], flows: int, done: Completions) -> float:
    async def one(person: Person) -> None:
        for _ in range(flows):
            call_id, round_id = await person.start()
            await person.answer(round_id)
            await done.wait(call_id)

    started = time.perf_counter()
    await asyncio.gather(*(one(p) for p in people))
    return len(people) * flows / (time.perf_counter() - started)


async def _direct_flows(url: str, concurrency: int, flows: int) -> float:
    client = RawClient(url, connections=concurrency)

    async def one() -> None:
        for _ in range(flows):
            await client.flow(TOOL)

    try:
        started = time.perf_counter()
        await asyncio.gather(*(one() for _ in range(concurrency)))
        return concurrency * flows / (time.perf_counter() - started)
    finally:
        await client.close()


def _cpu_seconds(run: Stack) -> dict[str, float]:
    """CPU the web process, and the worker process if there is one, have used so far."""
    spent = {"web": cpu_seconds(run.web_pid)}
    if run.worker_pid is not None:
        spent["worker"] = cpu_seconds(run.worker_pid)
    return spent


async def p2_throughput(run: Stack, plan: Plan, people: list[Person]) -> dict[str, Any]:
    app, direct = [], []
    cpu: dict[str, list[float]] = {"web": [], "worker": []}
    rounds = len(people) * plan.throughput_flows
    async with Completions(interval=0.01) as done:
        for _ in range(plan.throughput_repeats):
            before = _cpu_seconds(run)
            app.append(await _app_flows(people, plan.throughput_flows, done))
            for name, spent in _cpu_seconds(run).items():
                cpu[name].append((spent - before[name]) * 1000 / rounds)
            direct.append(await _direct_flows(run.mcp_url, plan.concurrency, plan.throughput_flows))
    figures: dict[str, Any] = {
        "concurrency": plan.concurrency,
        "flows_per_person": plan.throughput_flows,
        "app": summary(app, "rounds/s"),
        "direct": summary(direct, "rounds/s"),
        # The web process's CPU (its in-process worker's included) for each round over HTTP:
        # one interpreter, so rounds/s can be no more than 1,000 over it; and the task
        # worker's, when it is a process of its own.
        "web_cpu_per_round": summary(cpu["web"], "ms"),
        "worker_cpu_per_round": summary(cpu["worker"], "ms") if cpu["worker"] else None,
    }
    figures["ratio"] = ratio(figures["app"], figures["direct"])
    figures["target_ratio"] = 0.7
    return figures


# -- memory --------------------------------------------------------------------------------


async def memory(run: Stack, plan: Plan, people: list[Person], rounds_so_far: int) -> dict:
    """Drive rounds until ``plan.memory_rounds`` went through the app; RSS after warm-up and
    at the end gives the growth per round, and RSS after every tenth of the rounds (the
    ``curve``) shows whether it settles (flat second half) or leaks (a steady slope)."""
    total = max(plan.memory_rounds - rounds_so_far, 0)
    per_person = max(total // len(people), 1)
    tenth = max(per_person // 10, 1)
    chunks = [tenth] * 9 + [max(per_person - 9 * tenth, 1)]
    curve: list[dict[str, Any]] = []
    done_rounds = rounds_so_far
    started = time.perf_counter()

    async def sample(baseline: bool = False) -> dict[str, dict[str, int | None]]:
        now = {"web": rss_kb(run.web_pid), "worker": rss_kb(run.worker_pid)}
        # What the web process holds after a full collection (bench/heap.py): Python objects
        # leaked per round would grow these in step with the rounds.
        held = await people[0].http.get("/bench-heap/" + ("?baseline=1" if baseline else ""))
        heap = held.json() if held.status_code == 200 else {}
        curve.append(
            {
                "rounds": done_rounds,
                "seconds": round(time.perf_counter() - started, 1),
                **{f"{name}_rss_mb": _mb(now[name]["rss_kb"]) for name in now},
                **{k: v for k, v in heap.items() if k != "top_growth"},
            }
        )
        if heap.get("top_growth"):
            figures["top_growth"] = heap["top_growth"]
        # Printed as it goes: a long run shows its curve before it ends.
        print(f"memory: {curve[-1]}", file=sys.stderr, flush=True)
        return now

    figures: dict[str, Any] = {}
    await sample()
    after_warmup: dict[str, dict[str, int | None]] = {}
    halfway: dict[str, dict[str, int | None]] = {}
    halfway_rounds = 0
    async with Completions(interval=0.01) as done:
        for index, chunk in enumerate(chunks):
            await _app_flows(people, chunk, done)
            done_rounds += chunk * len(people)
            now = await sample(baseline=index == 0)
            if index == 0:
                after_warmup = now
            if index == 4:
                halfway, halfway_rounds = now, done_rounds
    end = {"web": rss_kb(run.web_pid), "worker": rss_kb(run.worker_pid)}
    measured = done_rounds - rounds_so_far - chunks[0] * len(people)
    second_half = done_rounds - halfway_rounds
    figures.update(rounds=done_rounds, rounds_after_warmup=measured, curve=curve)
    first, last = curve[1], curve[-1]
    for key in ("gc_objects", "allocated_blocks"):
        if key in first and key in last:
            # Net Python objects (blocks) the web process kept per round after warm-up.
            figures[f"{key}_per_round"] = (last[key] - first[key]) / measured
    for name in ("web", "worker"):
        a, h, b = after_warmup[name]["rss_kb"], halfway[name]["rss_kb"], end[name]["rss_kb"]
        peak = end[name]["peak_rss_kb"]
        figures[name] = {
            "peak_rss_mb": _mb(peak),
            "rss_after_warmup_mb": _mb(a),
            "rss_end_mb": _mb(b),
            "growth_bytes_per_round": _per_round(a, b, measured),
            # The second half alone: near zero when the process settled, the same slope as
            # the whole when it leaks.
            "growth_bytes_per_round_second_half": _per_round(h, b, second_half),
        }
    if run.worker_pid is None:
        figures["worker"]["note"] = "the worker runs inside the web process"
    return figures


def _mb(kb: int | None) -> float | None:
    return round(kb / 1024, 2) if kb is not None else None


def _per_round(before_kb: int | None, after_kb: int | None, rounds: int) -> float | None:
    if before_kb is None or after_kb is None or rounds <= 0:
        return None
    return (after_kb - before_kb) * 1024 / rounds


# -- P4 ------------------------------------------------------------------------------------


async def p4_live(run: Stack, plan: Plan, person: Person) -> dict[str, Any]:
    from . import live

    return await live.measure(run, plan.live_repeats, person)


# -- the run -------------------------------------------------------------------------------


async def _signed_in(run: Stack, count: int) -> list[Person]:
    people = [Person(run.app_url, PERSON, PASSWORD) for _ in range(count)]
    await asyncio.gather(*(p.login() for p in people))
    return people


async def p6_watchers(run: Stack, plan: Plan, person: Person, context: dict) -> dict[str, Any]:
    from . import watchers

    return await watchers.measure(
        run,
        person,
        context,
        people=plan.watch_people,
        concerned=plan.watch_concerned,
        events=plan.watch_events,
        page_repeats=plan.page_repeats,
    )


# Every phase, in the order a run measures them; ``--only`` picks some.
PHASES = ("p5", "p1", "p1_floor", "p4", "p2", "p2_floor", "memory", "p6", "p7", "flow", "p3")


async def _web_phases(
    run: Stack,
    plan: Plan,
    figures: dict[str, Any],
    context: dict,
    only: frozenset[str] = frozenset(PHASES),
) -> None:
    people = await _signed_in(run, plan.concurrency)
    try:
        # Warm both sides up (imports, connections, template caches) before measuring.
        async with Completions() as done:
            await _app_flows(people[:1], 3, done)
        await _direct_flows(run.mcp_url, 1, 3)
        if only != frozenset(PHASES):
            await _some_web_phases(run, plan, figures, people, only, context)
            return
        figures["p1"] = await guarded("p1", p1_latency(run, plan, people[0]))
        figures["p1_floor"] = await guarded("p1_floor", django_floor.p1_floor(run, plan, people[0]))
        figures["p4"] = await guarded("p4", p4_live(run, plan, people[0]))
        figures["p2"] = await guarded("p2", p2_throughput(run, plan, people))
        figures["p2_floor"] = await guarded("p2_floor", django_floor.p2_floor(run, plan, people))
        app_rounds = (
            3
            + plan.latency_repeats
            + plan.live_repeats
            + plan.throughput_repeats * plan.concurrency * plan.throughput_flows
        )
        figures["memory"] = await guarded("memory", memory(run, plan, people, app_rounds))
        # After the memory figure: P6's thousand sockets would count in its growth.
        figures["p6"] = await guarded("p6", p6_watchers(run, plan, people[0], context))
        # Last of the web phases: the crowd's starts leave the process busy for a moment.
        figures["p7"] = await guarded("p7", _p7(run, plan))
    finally:
        await asyncio.gather(*(p.close() for p in people))


async def _some_web_phases(
    run: Stack,
    plan: Plan,
    figures: dict[str, Any],
    people: list[Person],
    only: frozenset[str],
    context: dict,
) -> None:
    """The web phases ``--only`` names, alone (e.g. the long memory run by itself)."""
    if "p1" in only:
        figures["p1"] = await guarded("p1", p1_latency(run, plan, people[0]))
    if "p1_floor" in only:
        figures["p1_floor"] = await guarded("p1_floor", django_floor.p1_floor(run, plan, people[0]))
    if "p4" in only:
        figures["p4"] = await guarded("p4", p4_live(run, plan, people[0]))
    if "p2" in only:
        figures["p2"] = await guarded("p2", p2_throughput(run, plan, people))
    if "p2_floor" in only:
        figures["p2_floor"] = await guarded("p2_floor", django_floor.p2_floor(run, plan, people))
    if "memory" in only:
        figures["memory"] = await guarded("memory", memory(run, plan, people, 3))
    if "p6" in only:
        figures["p6"] = await guarded("p6", p6_watchers(run, plan, people[0], context))
    if "p7" in only:
        figures["p7"] = await guarded("p7", _p7(run, plan))


async def _p7(run: Stack, plan: Plan) -> dict[str, Any]:
    from . import starts

    return await starts.measure(run, plan.starts_people, plan.starts_per_person, plan.starts_single)


def run_suite(
    backend: str,
    mode: str,
    worker_mode: str,
    worker_interval: float,
    profile_dir: Path | None = None,
    memory_rounds: int | None = None,
    only: frozenset[str] = frozenset(PHASES),
    sql_dir: Path | None = None,
) -> dict:
    """``only`` picks phases (``--only p5``: storage alone, on the same fresh database the full
    run parks into first; ``--only memory``: the long memory run alone); default all."""
    plan = PLANS[mode]
    if memory_rounds:
        plan = replace(plan, memory_rounds=memory_rounds)
    if worker_mode == "auto":
        # SQLite: the embedded default (tasks in a thread of the web process). PostgreSQL: the
        # scale-out shape (a db_worker process; Redis carries live events when it answers).
        worker_mode = (
            "inprocess" if backend == "sqlite" and inprocess_worker_supported() else "process"
        )
    figures: dict[str, Any] = {"backend": backend, "plan": asdict(plan), "worker": worker_mode}
    if worker_mode == "process":
        figures["worker_interval_s"] = worker_interval
    started = time.perf_counter()
    # P6 holds thousands of sockets: this process and the servers it starts need the files.
    from .watchers import raise_fd_limit

    raise_fd_limit()
    with stack(backend, worker_mode=worker_mode, worker_interval=worker_interval) as run:
        from . import seed

        seed.setup_django()
        context = seed.prepare(run.mcp_url)
        if "p5" in only:
            figures["p5"] = phase("p5", pages.storage, plan.storage_rounds, context)
        if only - {"p5", "p3", "flow"}:
            asyncio.run(_web_phases(run, plan, figures, context, only))
        if "flow" in only:
            # Queries and CPU of one person's whole flow, in this process (bench/flow.py);
            # before P3 seeds its hundred thousand rounds.
            from . import flow

            sql_path = sql_dir / f"flow-{backend}-sql.txt" if sql_dir is not None else None
            figures["flow"] = phase("flow", flow.measure, context, plan.flow_repeats, sql_path)
        if "p3" in only:
            figures["p3"] = phase("p3", pages.scale, run, plan, context)
        if profile_dir is not None:
            from .profile import profile

            figures["profiles"] = profile(profile_dir, backend, context)
    figures["seconds"] = time.perf_counter() - started
    return figures


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="One backend's benchmark figures, as JSON.")
    parser.add_argument("--backend", choices=("sqlite", "postgresql"), required=True)
    parser.add_argument("--mode", choices=tuple(PLANS), default="full")
    parser.add_argument("--worker", choices=("auto", "process", "inprocess"), default="auto")
    parser.add_argument("--worker-interval", type=float, default=0.05)
    parser.add_argument("--json", type=Path, required=True)
    parser.add_argument("--profile", type=Path, default=None, help="write profiles here")
    parser.add_argument("--memory-rounds", type=int, default=None)
    parser.add_argument(
        "--only",
        default=",".join(PHASES),
        help=f"comma-separated phases to run (default all: {','.join(PHASES)})",
    )
    parser.add_argument("--sql-dir", type=Path, default=None, help="where the flow's SQL goes")
    args = parser.parse_args(argv)
    only = frozenset(name.strip() for name in args.only.split(",") if name.strip())
    if unknown := only - set(PHASES):
        parser.error(f"unknown phases: {', '.join(sorted(unknown))}")
    figures = run_suite(
        args.backend,
        args.mode,
        args.worker,
        args.worker_interval,
        profile_dir=args.profile,
        memory_rounds=args.memory_rounds,
        only=only,
        sql_dir=args.sql_dir,
    )
    args.json.write_text(json.dumps(figures, indent=2, default=str))


if __name__ == "__main__":
    main()
