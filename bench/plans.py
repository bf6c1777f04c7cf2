"""How much a benchmark run does: the plans `--smoke`, `--quick` and the full run."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Plan:
    """How much of everything to do: ``smoke`` (seconds), ``quick`` (CI) or ``full``."""

    latency_repeats: int
    fastmcp_repeats: int
    concurrency: int
    throughput_flows: int  # per simulated person, per repetition
    throughput_repeats: int
    memory_rounds: int
    storage_rounds: int
    scale_counts: tuple[int, int]
    page_repeats: int
    live_repeats: int
    # P6 (bench/watchers.py): people with two sockets each, how many one event concerns, and
    # how many such events are timed.
    watch_people: int = 10
    watch_concerned: int = 5
    watch_events: int = 1
    # P7 (bench/starts.py): this many people each start ``starts_per_person`` calls at once;
    # a single start alone, ``starts_single`` times, is the baseline.
    starts_people: int = 2
    starts_per_person: int = 2
    starts_single: int = 1
    # One person's whole flow, warm, in the bench process (bench/flow.py).
    flow_repeats: int = 20


PLANS = {
    "smoke": Plan(
        3, 3, 2, 3, 1, 20, 40, (10, 60), 3, 3, watch_people=10, watch_concerned=5, flow_repeats=3
    ),
    "quick": Plan(
        20,
        20,
        4,
        10,
        3,
        300,
        100,
        (100, 5_000),
        10,
        20,
        100,
        50,
        2,
        starts_people=20,
        starts_per_person=2,
        starts_single=3,
        flow_repeats=10,
    ),
    # 10,000 rounds for the memory figure would take about 20 minutes on 2 cores; the full run
    # stays under 15 (both backends) with 2,000. `--memory-rounds 10000` runs the long one.
    "full": Plan(
        60,
        60,
        8,
        20,
        3,
        2_000,
        3_000,
        (100, 100_000),
        20,
        60,
        1_000,
        500,
        3,
        starts_people=50,
        starts_per_person=2,
        starts_single=5,
    ),
}
