"""`make bench` cannot rot: its smoke run must start everything, print the table and write
every figure. Speed is never judged here (benchmarks print figures; they do not fail CI)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.run import rows, table
from bench.stack import REPO_ROOT, reachable
from bench.stats import quantile, ratio, summary

SUMMARY_KEYS = {"unit", "n", "median", "p25", "p75", "p95", "min", "max"}


def _figure(value: dict) -> None:
    assert set(value) >= SUMMARY_KEYS, value
    assert value["n"] >= 1, value
    assert value["min"] <= value["median"] <= value["max"], value


def _backend(figures: dict) -> None:
    assert "error" not in figures, figures
    p1 = figures["p1"]
    for name in ("app", "app_post", "raw", "fastmcp"):
        _figure(p1[name])
    assert p1["ratio_raw"] > 0 and p1["ratio_fastmcp"] > 0

    # The Django floor (bench/django_floor.py): trivial view, bare ASGI, raw beside them.
    p1_floor = figures["p1_floor"]
    for name in ("django", "bare", "raw"):
        _figure(p1_floor[name])
    for name in ("django_over_raw", "best_ratio_raw", "best_ratio_raw_bare"):
        assert p1_floor[name] > 0, p1_floor
    assert p1_floor["best_ratio_raw"] > 1 and p1_floor["best_ratio_raw_bare"] > 1

    p2 = figures["p2"]
    _figure(p2["app"])
    _figure(p2["direct"])
    assert p2["ratio"] > 0
    # The web process did the rounds' work, so it spent CPU on each.
    _figure(p2["web_cpu_per_round"])
    assert p2["web_cpu_per_round"]["min"] > 0

    p2_floor = figures["p2_floor"]
    assert p2_floor["concurrency"] == p2["concurrency"]
    for name in ("django", "bare", "django_http_only", "direct"):
        _figure(p2_floor[name])
    assert p2_floor["best_ratio"] > 0 and p2_floor["best_ratio_bare"] > 0
    _figure(p2_floor["web_cpu_per_flow"])
    assert p2_floor["web_cpu_per_flow"]["min"] > 0

    p3 = figures["p3"]
    small, large = p3["counts"]
    assert small < large
    for page in ("inbox", "dashboard", "round_page"):
        for count in (small, large):
            _figure(p3[page][str(count)]["time"])
            assert p3[page][str(count)]["queries"] > 0
        assert p3[page]["ratio"] > 0
        assert isinstance(p3[page]["queries_fixed"], bool)

    p4 = figures["p4"]
    if p4["status"] == "ok":
        _figure(p4["stored_to_received"])
    else:
        assert p4["status"] == "n/a (no live consumer)"

    p5 = figures["p5"]
    assert p5["bytes_per_round"] > p5["request_json_bytes"] > 0
    assert p5["by_table_bytes_per_round"]
    # Counted after the first rounds, whose growth (what fresh tables need once included) is
    # kept beside it.
    assert p5["first_rounds"] >= 1
    assert p5["first_rounds_beyond_request_json_bytes"] + p5["request_json_bytes"] >= 0
    if "calls_call_updates_per_round" in p5:  # PostgreSQL: what its updates cost
        assert p5["calls_call_updates_per_round"] >= p5["calls_call_hot_updates_per_round"] >= 0
        # A smoke run's few rounds after the first ones fit in the indexes' first pages.
        assert p5["calls_call_updates_per_round"] > 0 and p5["call_index_bytes_per_round"] >= 0

    # One person's whole flow (bench/flow.py): every phase counted, the SQL listed.
    flow = figures["flow"]
    for phase in ("start", "page", "answer", "delivery"):
        assert flow["queries"][phase] > 0 and flow["cpu_ms"][phase] > 0, flow
    assert flow["queries"]["total"] == pytest.approx(
        sum(flow["queries"][p] for p in ("start", "page", "answer", "delivery")), abs=4
    ), flow
    assert Path(flow["sql_list"]).read_text().startswith("== start:")
    # What the flow's queries are for, and its floor (the same requests to a trivial view).
    assert sum(flow["queries_by_kind"].values()) == pytest.approx(flow["queries"]["total"], abs=4)
    assert flow["queries_by_kind"]["sign_in"] > 0 and flow["queries_by_kind"]["app"] > 0
    assert 0 < flow["floor"]["queries"] < flow["queries"]["total"]
    assert 0 < flow["floor"]["cpu_ms"] < flow["cpu_ms"]["total"]
    # Where its CPU goes: each part measured (the live loop's share may round to nothing),
    # and the parts add up to about the flow's CPU (they are measured in flows of their own).
    spent = flow["cpu_spent_ms"]
    assert set(spent) == {
        "sql_compile",
        "orm",
        "database",
        "templates",
        "mcp_loop",
        "live_loop",
        "rest",
    }
    assert all(spent[p] > 0 for p in ("sql_compile", "orm", "database", "templates", "rest")), spent
    assert spent["mcp_loop"] > 0, "the MCP client's loop thread was not found"
    assert sum(spent.values()) == pytest.approx(flow["cpu_ms"]["total"], rel=0.5), (spent, flow)
    assert flow["cpu_ms_counted_total"] > 0

    memory = figures["memory"]
    assert memory["rounds"] > 0
    assert memory["web"]["peak_rss_mb"] > 0
    assert memory["web"]["growth_bytes_per_round"] is not None
    if figures["worker"] == "process":
        assert memory["worker"]["peak_rss_mb"] > 0
    # The curve: RSS at the start and after every tenth of the rounds.
    assert len(memory["curve"]) == 11
    assert memory["web"]["growth_bytes_per_round_second_half"] is not None

    # P7: every start of the crowd and of the single one reached its round page.
    p7 = figures["p7"]
    for part in ("single", "crowd"):
        assert p7[part]["starts"] == p7[part]["reached"] > 0, p7
        assert p7[part]["errors"] == 0, p7
        _figure(p7[part]["time"])
    assert p7["ratio_p95"] > 0
    # What the target allows a start, beside what one trivial page costs the same process.
    assert p7["cpu_budget_ms_per_start"] > 0 and p7["floor_cpu_ms_per_request"] > 0

    # P6 (bench/watchers.py): every concerned person heard the event, nobody else did.
    p6 = figures["p6"]
    assert p6["sockets"] == 2 * p6["people"] and p6["still_open"] == p6["sockets"]
    assert p6["reached"] == [p6["concerned"]] * p6["events"]
    assert p6["unconcerned_reached"] == 0
    for name in ("published_to_received", "page_idle", "page_loaded"):
        _figure(p6[name])
    assert p6["memory_open"]["rss_mb"] > 0 and p6["page_ratio"] > 0


@pytest.mark.timeout(600)
def test_smoke_run_prints_the_table_and_writes_every_figure(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--smoke", "--json", str(out)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=540,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["meta"]["mode"] == "smoke"
    assert result["meta"]["nproc"] >= 1
    expected = {"sqlite"} | ({"postgresql"} if reachable(5432) else set())
    assert set(result["backends"]) == expected
    for figures in result["backends"].values():
        _backend(figures)
    for label in (
        "P1 app / raw",
        "P1 Django floor",
        "P1 best reachable",
        "P2 app / direct",
        "P2 web process CPU a round",
        "P2 web process CPU a floor flow",
        "P2 Django floor",
        "P2 best reachable",
        "P3 inbox",
        "P4 live",
        "P5 bytes",
        "P5   the first rounds on a fresh database",
        "P6 ",
        "Flow: SQL queries (start/page/answer/delivery)",
        "Flow: CPU ms (start/page/answer/delivery)",
        "Flow:   sign-in / BEGIN-COMMIT / the app's",
        "Flow floor: its 3 requests to the trivial view",
        "Memory web: RSS every tenth",
        "P7 crowd p95 / one start",
        "P7 CPU a start the target allows",
    ):
        assert label in done.stdout, done.stdout
    assert str(out) in done.stdout


def test_summary_and_ratio() -> None:
    figure = summary([3.0, 1.0, 2.0, 4.0], "ms")
    assert figure["median"] == 2.5
    assert (figure["min"], figure["max"]) == (1.0, 4.0)
    assert figure["p25"] == quantile([1, 2, 3, 4], 0.25) == 1.75
    assert summary([], "ms")["median"] is None
    assert ratio({"median": 3.0}, {"median": 1.5}) == 2.0
    assert ratio({"median": 3.0}, {"median": None}) is None


def test_table_says_when_a_backend_failed() -> None:
    result = {
        "meta": {"mode": "smoke", "date": "d", "nproc": 2, "commit": ""},
        "backends": {"sqlite": {"backend": "sqlite", "error": "bench.suite exited with 1"}},
        "skipped": {"postgresql": "nothing answers on 127.0.0.1:5432"},
    }
    text = table(result)
    assert "bench.suite exited with 1" in text
    assert "postgresql: skipped" in text
    assert rows({"error": "x"}) == [("error", "x")]
