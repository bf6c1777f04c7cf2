"""``make bench``: every figure, for SQLite and (when it answers) PostgreSQL, as a table and JSON.

    python -m bench                 # full run (what docs/performance.md shows)
    python -m bench --quick         # CI-sized
    python -m bench --smoke         # seconds; what tests/bench runs
    python -m bench --json PATH     # where the figures go (default var/bench/last.json)

Each backend runs in a child process (``python -m bench.suite``) with its own stack. The
figures are printed, never judged: a benchmark does not fail on speed.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .flow import rows as flow_rows
from .stack import REPO_ROOT, reachable

DEFAULT_JSON = REPO_ROOT / "var" / "bench" / "last.json"


def _run_backend(backend: str, args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="mrtrweb-bench-") as tmp:
        out = Path(tmp) / f"{backend}.json"
        command = [
            sys.executable,
            "-m",
            "bench.suite",
            "--backend",
            backend,
            "--mode",
            args.mode,
            "--worker",
            args.worker,
            "--worker-interval",
            str(args.worker_interval),
            "--json",
            str(out),
        ]
        if args.profile:
            command += ["--profile", str(args.json.parent)]
        if args.memory_rounds:
            command += ["--memory-rounds", str(args.memory_rounds)]
        command += ["--sql-dir", str(args.json.parent)]
        started = time.perf_counter()
        done = subprocess.run(command, cwd=REPO_ROOT, check=False)
        if done.returncode != 0 or not out.exists():
            return {
                "backend": backend,
                "error": f"bench.suite exited with {done.returncode}",
                "seconds": time.perf_counter() - started,
            }
        return json.loads(out.read_text())


def _git_commit() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


# -- the table -----------------------------------------------------------------------------


def _num(value: Any, digits: int = 1) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return f"{value:,}"


def _spread(figure: dict[str, Any] | None, digits: int = 1) -> str:
    if not figure or figure.get("median") is None:
        return "-"
    return (
        f"{_num(figure['median'], digits)} "
        f"[{_num(figure['p25'], digits)}-{_num(figure['p75'], digits)}]"
    )


def _ratio(value: Any, target: str) -> str:
    return "-" if value is None else f"{value:.2f}x ({target})"


def _over(value: Any, *parts: Any) -> float | None:
    """The median of ``value`` over the sum of the medians of ``parts`` (None if any is
    missing)."""
    medians = [p.get("median") if isinstance(p, dict) else None for p in (value, *parts)]
    if any(m is None for m in medians) or not sum(medians[1:]):
        return None
    return medians[0] / sum(medians[1:])


def rows(figures: dict[str, Any]) -> list[tuple[str, str]]:
    """(label, value) lines for one backend."""
    if "error" in figures:
        return [("error", figures["error"])]
    out: list[tuple[str, str]] = []
    for phase in (
        "p1",
        "p1_floor",
        "p2",
        "p2_floor",
        "p3",
        "p4",
        "p5",
        "memory",
        "p6",
        "p7",
        "flow",
    ):
        if "error" in (figures.get(phase) or {}):
            out.append((f"{phase} error", figures[phase]["error"]))
    worker = figures.get("worker")
    if worker == "process":
        setup = f"db_worker process, --interval {figures.get('worker_interval_s')} s"
    else:
        setup = "tasks in the web process"
    out.append(("setup", setup))
    p1 = figures.get("p1", {})
    out += [
        ("P1 app round: answer POST -> result stored, ms", _spread(p1.get("app"))),
        ("P1 the answer POST until its page is back, ms", _spread(p1.get("app_post"))),
        ("P1 raw httpx retry (floor), ms", _spread(p1.get("raw"))),
        ("P1 fastmcp client round, ms", _spread(p1.get("fastmcp"))),
        ("P1 app / raw", _ratio(p1.get("ratio_raw"), "info")),
        ("P1 app / fastmcp", _ratio(p1.get("ratio_fastmcp"), "info")),
    ]
    # What Django itself costs (bench/django_floor.py): the best P1 and P2 could reach.
    f1 = figures.get("p1_floor", {})
    out += [
        ("P1 Django floor: trivial view POST, ms", _spread(f1.get("django"))),
        ("P1 bare ASGI POST (uvicorn, no Django), ms", _spread(f1.get("bare"))),
        ("P1 raw retry, sampled beside them, ms", _spread(f1.get("raw"))),
        ("P1 Django floor / raw", _ratio(f1.get("django_over_raw"), "info")),
        ("P1 best reachable: (floor + raw) / raw", _ratio(f1.get("best_ratio_raw"), "info")),
        ("P1 without Django: (bare + raw) / raw", _ratio(f1.get("best_ratio_raw_bare"), "info")),
        # Issue 18's yardstick: the app against what Django itself costs, in the same run.
        (
            "P1 app / (Django floor + raw)",
            _ratio(_over(p1.get("app"), f1.get("django"), f1.get("raw")), "target <= 1.5x"),
        ),
    ]
    p2 = figures.get("p2", {})
    c = p2.get("concurrency")
    out += [
        (f"P2 app throughput, {c} people, rounds/s", _spread(p2.get("app"))),
        (f"P2 direct client, {c} concurrent, rounds/s", _spread(p2.get("direct"))),
        ("P2 app / direct", _ratio(p2.get("ratio"), "info")),
        ("P2 web process CPU a round, ms", _spread(p2.get("web_cpu_per_round"), 1)),
    ]
    if p2.get("worker_cpu_per_round"):
        out.append(("P2 worker process CPU a round, ms", _spread(p2["worker_cpu_per_round"], 1)))
    f2 = figures.get("p2_floor", {})
    c = f2.get("concurrency")
    out += [
        (f"P2 Django floor flows + 2 MCP, {c} people, /s", _spread(f2.get("django"))),
        (f"P2 bare ASGI flows + 2 MCP, {c} people, /s", _spread(f2.get("bare"))),
        (f"P2 Django floor flows alone, {c} people, /s", _spread(f2.get("django_http_only"))),
        (f"P2 direct client, {c} concurrent, sampled beside, /s", _spread(f2.get("direct"))),
        ("P2 web process CPU a floor flow, ms", _spread(f2.get("web_cpu_per_flow"), 1)),
        ("P2 best reachable: floor flows / direct", _ratio(f2.get("best_ratio"), "info")),
        ("P2 without Django: bare flows / direct", _ratio(f2.get("best_ratio_bare"), "info")),
        (
            "P2 app / Django floor flows",
            _ratio(_over(p2.get("app"), f2.get("django")), "target >= 0.6x"),
        ),
    ]
    p3 = figures.get("p3", {})
    small, large = p3.get("counts", [None, None])
    for page in ("inbox", "dashboard", "round_page"):
        entry = p3.get(page)
        if not entry:
            continue
        a, b = entry[str(small)], entry[str(large)]
        out.append(
            (
                f"P3 {page}: {small:,} -> {large:,} pending, ms",
                f"{_spread(a['time'])} -> {_spread(b['time'])}",
            )
        )
        out.append(
            (
                f"P3 {page}: ratio; SQL queries",
                f"{_ratio(entry['ratio'], 'target <= 1.5x')}; "
                f"{a['queries']} -> {b['queries']}"
                f"{'' if entry['queries_fixed'] else ' (NOT fixed)'}",
            )
        )
    p4 = figures.get("p4", {})
    if p4.get("status") == "ok":
        stored = p4["stored_to_received"]
        out.append(
            (
                "P4 live: result stored -> websocket frame, ms",
                f"p50 {_num(stored['median'])}, p95 {_num(stored['p95'])} (target p50 <= 50)",
            )
        )
        pub = p4["published_to_received"]
        out.append(
            (
                "P4 live: published -> websocket frame, ms",
                f"p50 {_num(pub['median'])}, p95 {_num(pub['p95'])}",
            )
        )
    else:
        out.append(("P4 live latency", p4.get("status", "-")))
    p5 = figures.get("p5", {})
    out += [
        ("P5 bytes per parked round (all tables)", _num(p5.get("bytes_per_round"), 0)),
        (
            "P5   beyond its request JSON",
            f"{_num(p5.get('beyond_request_json_bytes'), 0)}"
            f" (target <= {_num(p5.get('target_bytes', 1024), 0)})",
        ),
        (
            "P5   the first rounds on a fresh database (how many), B",
            f"{_num(p5.get('first_rounds_beyond_request_json_bytes'), 0)}"
            f" ({_num(p5.get('first_rounds'), 0)})",
        ),
    ]
    if "calls_call_updates_per_round" in p5:
        # PostgreSQL: an update that changes an indexed column is not HOT, and every index
        # of the table takes a second entry for the row (what holds P5 back there).
        out.append(
            (
                "P5   call row updates a round, HOT of them; call's indexes, B",
                f"{_num(p5['calls_call_updates_per_round'])}, "
                f"{_num(p5['calls_call_hot_updates_per_round'])}; "
                f"{_num(p5['call_index_bytes_per_round'], 0)}",
            )
        )
    # Queries and CPU of one person's whole flow (bench/flow.py), against their targets.
    out += flow_rows(figures.get("flow", {}))
    mem = figures.get("memory", {})
    for name in ("web", "worker"):
        entry = mem.get(name) or {}
        label = f"Memory {name}: peak RSS, MB; growth after warm-up"
        if entry.get("peak_rss_mb") is None:
            out.append((label, entry.get("note", "-")))
            continue
        out.append(
            (
                label,
                f"{_num(entry['peak_rss_mb'])} after {mem.get('rounds', 0):,} rounds; "
                f"{_num(entry['growth_bytes_per_round'], 0)} B/round",
            )
        )
    out += _p6_rows(figures.get("p6") or {})
    out += _memory_curve_rows(mem)
    # P7, starting calls (bench/starts.py): a crowd's starts against one start alone.
    out += _p7_rows(figures.get("p7") or {})
    out.append(("run time, s", _num(figures.get("seconds"), 0)))
    return out


def _p6_rows(p6: dict[str, Any]) -> list[tuple[str, str]]:
    """P6, many people watching (bench/watchers.py): sockets, one event, memory, a page."""
    if not p6.get("sockets"):
        return []
    n, concerned = p6["sockets"], p6["concerned"]
    latency = p6.get("published_to_received") or {}
    idle, opened = p6.get("memory_idle") or {}, p6.get("memory_open_after_events") or {}
    reached = p6.get("reached") or []
    cpu = p6.get("event_web_cpu_ms") or []
    return [
        (
            f"P6 {n:,} sockets ({p6['layer']} layer): event -> {concerned} people, ms",
            f"p50 {_num(latency.get('median'))}, p95 {_num(latency.get('p95'))}, "
            f"max {_num(latency.get('max'))} (target p95 <= 1,000)",
        ),
        (
            "P6   reached per event; web CPU per event, ms",
            f"{'/'.join(str(r) for r in reached)} of {concerned}"
            f"{'' if not p6.get('unconcerned_reached') else ' (and others!)'}; "
            f"{_num(statistics.median(cpu), 0) if cpu else '-'}",
        ),
        (
            "P6   web RSS idle -> sockets open, MB",
            f"{_num(idle.get('rss_mb'))} -> {_num(opened.get('rss_mb'))} "
            f"(peak {_num(opened.get('peak_rss_mb'))}; target <= 300)",
        ),
        (
            "P6   opening them: s; web CPU per socket, ms",
            f"{_num(p6.get('open_seconds'))}; {_num(p6.get('open_web_cpu_ms_per_socket'))}",
        ),
        (
            "P6   inbox page idle -> sockets open, ms",
            f"{_spread(p6.get('page_idle'))} -> {_spread(p6.get('page_loaded'))}; "
            f"{_ratio(p6.get('page_ratio'), 'target <= 1.5x')}",
        ),
    ]


def _memory_curve_rows(mem: dict[str, Any]) -> list[tuple[str, str]]:
    """The web process's RSS every tenth of the memory rounds, and the second half's slope."""
    curve = mem.get("curve") or []
    web = mem.get("web") or {}
    if not curve or web.get("peak_rss_mb") is None:
        return []
    points = " ".join(_num(point.get("web_rss_mb")) for point in curve)
    return [
        ("Memory web: RSS every tenth of the rounds, MB", points),
        (
            "Memory web: growth in the second half",
            f"{_num(web.get('growth_bytes_per_round_second_half'), 0)} B/round",
        ),
    ]


def _p7_rows(p7: dict[str, Any]) -> list[tuple[str, str]]:
    if not p7 or "error" in p7:
        return []
    single, crowd = p7.get("single") or {}, p7.get("crowd") or {}
    one, many = single.get("time") or {}, crowd.get("time") or {}
    starts = crowd.get("starts", 0)
    return [
        ("P7 one start alone: POST -> round page, ms", _spread(one)),
        (
            f"P7 {starts} starts by {p7.get('people')} people at once, ms",
            f"p50 {_num(many.get('median'))}, p95 {_num(many.get('p95'))}, "
            f"max {_num(many.get('max'))}",
        ),
        (
            "P7 reached their round; straight from the POST; clicks; errors",
            f"{crowd.get('reached', 0)} of {starts}; {crowd.get('direct', 0)}; "
            f"{crowd.get('clicks', 0)}; {crowd.get('errors', 0)}",
        ),
        ("P7 crowd p95 / one start", _ratio(p7.get("ratio_p95"), "target <= 3x")),
        (
            "P7 web process CPU per start of the crowd, ms",
            f"{_num(p7.get('web_cpu_ms_per_start'))} (x {starts} = "
            f"{_num((p7.get('web_cpu_ms_per_start') or 0) * starts / 1000, 2)} s)",
        ),
        (
            "P7 CPU a start the target allows; one trivial signed-in GET, ms",
            f"{_num(p7.get('cpu_budget_ms_per_start'), 2)}; "
            f"{_num(p7.get('floor_cpu_ms_per_request'), 2)}",
        ),
    ]


def table(result: dict[str, Any]) -> str:
    backends = result["backends"]
    names = list(backends)
    labelled = {name: rows(backends[name]) for name in names}
    labels: list[str] = []
    for name in names:
        for label, _ in labelled[name]:
            if label not in labels:
                labels.append(label)
    columns = [{label: value for label, value in labelled[name]} for name in names]
    width0 = max(len(label) for label in labels)
    widths = [
        max(len(name), *(len(col.get(label, "")) for label in labels))
        for name, col in zip(names, columns, strict=True)
    ]
    meta = result["meta"]
    lines = [
        f"mrtrweb bench ({meta['mode']}) {meta['date']}  nproc={meta['nproc']}  "
        f"commit={meta['commit'] or '?'}; medians [p25-p75]",
        "  ".join(
            ["figure".ljust(width0), *(n.ljust(w) for n, w in zip(names, widths, strict=True))]
        ),
        "  ".join(["-" * width0, *("-" * w for w in widths)]),
    ]
    for label in labels:
        cells = [col.get(label, "") for col in columns]
        lines.append(
            "  ".join(
                [label.ljust(width0), *(c.ljust(w) for c, w in zip(cells, widths, strict=True))]
            ).rstrip()
        )
    for name, reason in result.get("skipped", {}).items():
        lines.append(f"{name}: skipped ({reason})")
    return "\n".join(line.rstrip() for line in lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", dest="mode", action="store_const", const="quick")
    size.add_argument("--smoke", dest="mode", action="store_const", const="smoke")
    parser.set_defaults(mode="full")
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON, help="where to write figures")
    parser.add_argument(
        "--backend",
        choices=("sqlite", "postgresql", "all"),
        default="all",
        help="all: SQLite, and PostgreSQL when 127.0.0.1:5432 answers",
    )
    parser.add_argument(
        "--worker",
        choices=("auto", "process", "inprocess"),
        default="auto",
        help="inprocess: the web process runs tasks (MRTRWEB_INPROCESS_WORKER, the embedded "
        "default); process: manage.py db_worker beside uvicorn (the scale-out shape); "
        "auto: inprocess on SQLite, process on PostgreSQL",
    )
    parser.add_argument(
        "--worker-interval",
        type=float,
        default=0.05,
        help="db_worker --interval in seconds (its own default, 1, adds up to 1 s per round)",
    )
    parser.add_argument(
        "--memory-rounds",
        type=int,
        default=None,
        help="rounds through the app before the memory figures (full: 2,000; the issue's "
        "10,000 takes about 20 minutes per backend on 2 cores)",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="also profile the answer path and the pages with pyinstrument (text reports "
        "beside the JSON)",
    )
    args = parser.parse_args(argv)

    backends = ["sqlite", "postgresql"] if args.backend == "all" else [args.backend]
    result: dict[str, Any] = {
        "meta": {
            "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "mode": args.mode,
            "nproc": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "commit": _git_commit(),
        },
        "backends": {},
        "skipped": {},
    }
    for backend in backends:
        if backend == "postgresql" and not reachable(5432):
            result["skipped"][backend] = "nothing answers on 127.0.0.1:5432"
            continue
        result["backends"][backend] = _run_backend(backend, args)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2, default=str) + "\n")
    print(table(result))
    print(f"\nfigures written to {args.json}")
    failed = any(
        "error" in figures
        or any("error" in (v or {}) for v in figures.values() if isinstance(v, dict))
        for figures in result["backends"].values()
    )
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
