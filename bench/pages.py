"""P3 (pages with 100 and 100,000 parked rounds) and P5 (database bytes per parked round).

Both run in the bench process, which has Django set up against the bench database: pages are
timed over HTTP against the running app (what a browser waits for) and their SQL queries are
counted by rendering the same URL in-process under ``CaptureQueriesContext``.
"""

from __future__ import annotations

import json
import time
from typing import Any

import httpx

from . import seed
from .stack import ADMIN, PASSWORD, PERSON, Stack
from .stats import summary

# -- P5 ------------------------------------------------------------------------------------


def _sqlite_sizes() -> dict[str, int]:
    from django.db import connection

    with connection.cursor() as cursor:
        try:
            cursor.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name")
            return {name: int(size) for name, size in cursor.fetchall()}
        except Exception:
            cursor.execute("PRAGMA page_size")
            page = cursor.fetchone()[0]
            cursor.execute("PRAGMA page_count")
            count = cursor.fetchone()[0]
            cursor.execute("PRAGMA freelist_count")
            free = cursor.fetchone()[0]
            return {"(whole file)": (count - free) * page}


def _postgres_sizes() -> dict[str, int]:
    from django.db import connection

    with connection.cursor() as cursor:
        # Each table (its heap, TOAST and maps) and each index apart, as SQLite's dbstat
        # lists them: the same total as pg_total_relation_size, and it says which index grew.
        cursor.execute(
            "SELECT c.relname, CASE c.relkind WHEN 'r' THEN pg_table_size(c.oid) "
            "ELSE pg_relation_size(c.oid) END FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = 'public' AND c.relkind IN ('r', 'i')"
        )
        return {name: int(size) for name, size in cursor.fetchall()}


# The tables a parked round writes, whose updates are counted (PostgreSQL).
_UPDATED = ("calls_call", "calls_round")


def _updates() -> dict[str, tuple[int, int]]:
    """PostgreSQL's count of updates to each of :data:`_UPDATED`, and of those that were HOT
    (heap-only: the new row version on the same page and no index entry for it, possible only
    when no indexed column changed). Every other update adds an entry to each of the table's
    indexes (until a vacuum), which is part of what a parked round costs."""
    from django.db import connection

    # Each backend reports its counts at most once a second (PGSTAT_MIN_INTERVAL): wait for
    # the engine's connections to have reported, and read a fresh snapshot.
    time.sleep(1.2)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute(
            "SELECT relname, n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables "
            "WHERE relname = ANY(%s)",
            [list(_UPDATED)],
        )
        return {name: (int(upd), int(hot)) for name, upd, hot in cursor.fetchall()}


def _index_names(table: str) -> list[str]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname FROM pg_indexes WHERE tablename = %s", [table])
        return [name for (name,) in cursor.fetchall()]


def _sizes() -> dict[str, int]:
    from django.db import connection

    return _sqlite_sizes() if connection.vendor == "sqlite" else _postgres_sizes()


def storage(rounds: int, context: dict[str, Any]) -> dict[str, Any]:
    """Park ``rounds`` rounds through the engine (a real call to the bench server each) and
    divide the growth of the database by their number.

    A tenth as many are parked first and not counted. On a fresh PostgreSQL database the
    first rows also pay for what every table and index needs once (a heap's first pages and
    its free-space map, each B-tree's first leaf and, when it splits, its root), a cost that
    does not grow with the rounds: spread over a thousand of them it read as about 250 B a
    round more than a parked round takes (SQLite creates each table's and index's first page
    with it). What the first ones cost, those included, is kept beside it."""
    from django.db import connection

    from mrtrweb.calls.models import Call, Round

    postgres = connection.vendor == "postgresql"
    if postgres:
        with connection.cursor() as cursor:
            cursor.execute("CHECKPOINT")
    warmup = max(rounds // 10, 1)
    empty = _sizes()
    ids = [seed.park(context).pk for _ in range(warmup)]
    updates_before = _updates() if postgres else {}
    before = _sizes()
    started = time.perf_counter()
    counted = []
    for _ in range(rounds):
        counted.append(seed.park(context).pk)
    elapsed = time.perf_counter() - started
    after = _sizes()
    updates_after = _updates() if postgres else {}
    ids += counted
    growth = _growth(before, after)
    total = sum(growth.values())
    request_json = [
        len(json.dumps(r, separators=(",", ":"), ensure_ascii=False).encode())
        for r in Round.objects.filter(call_id__in=counted).values_list("input_requests", flat=True)
    ]
    per_round = total / rounds
    own = sum(request_json) / len(request_json)
    first = sum(_growth(empty, before).values()) / warmup
    # Out of the way of P3, which counts pending rounds from 100 up (bench rows only).
    Round.objects.filter(call_id__in=ids).update(status=Round.Status.CANCELLED)
    Call.objects.filter(pk__in=ids).update(status=Call.Status.CANCELLED)
    return {
        "rounds": rounds,
        "bytes_per_round": per_round,
        "request_json_bytes": own,
        "beyond_request_json_bytes": per_round - own,
        # Issue 18: PostgreSQL's rows carry tuple headers SQLite's don't.
        "target_bytes": 1280 if connection.vendor == "postgresql" else 1024,
        "by_table_bytes_per_round": {name: size / rounds for name, size in growth.items()},
        # The first rounds on the fresh database, with what the tables need once.
        "first_rounds": warmup,
        "first_rounds_beyond_request_json_bytes": first - own,
        **(_update_figures(updates_before, updates_after, growth, rounds) if postgres else {}),
        "park_ms": summary([elapsed * 1000 / rounds], "ms"),
    }


def _growth(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """What each table and index grew by, those that did."""
    return {
        name: after.get(name, 0) - before.get(name, 0)
        for name in sorted(set(after) | set(before))
        if after.get(name, 0) != before.get(name, 0)
    }


def _update_figures(
    before: dict[str, tuple[int, int]],
    after: dict[str, tuple[int, int]],
    growth: dict[str, int],
    rounds: int,
) -> dict[str, Any]:
    """What PostgreSQL's updates while parking cost (what holds P5 back there): per parked
    round, each table's updates and how many were HOT, and the growth of the call's indexes,
    which take a second entry for each call whose update was not HOT."""
    figures: dict[str, Any] = {}
    for table in _UPDATED:
        upd = after.get(table, (0, 0))[0] - before.get(table, (0, 0))[0]
        hot = after.get(table, (0, 0))[1] - before.get(table, (0, 0))[1]
        figures[f"{table}_updates_per_round"] = upd / rounds
        figures[f"{table}_hot_updates_per_round"] = hot / rounds
    figures["call_index_bytes_per_round"] = (
        sum(growth.get(name, 0) for name in _index_names("calls_call")) / rounds
    )
    return figures


# -- P3 ------------------------------------------------------------------------------------

PAGES = ("inbox", "dashboard", "round_page")


def _urls() -> dict[str, tuple[str, str]]:
    """Page -> (who looks, URL). The round page is the newest pending round's."""
    from mrtrweb.calls.models import Round

    newest = (
        Round.objects.filter(status=Round.Status.PENDING).order_by("-created_at", "-id").first()
    )
    assert newest is not None
    return {
        "inbox": (PERSON, "/inbox/"),
        "dashboard": (ADMIN, "/dashboard/rounds/"),
        "round_page": (PERSON, f"/rounds/{newest.pk}/"),
    }


def _login(base_url: str, username: str) -> httpx.Client:
    client = httpx.Client(base_url=base_url, timeout=120.0)
    client.get("/accounts/login/").raise_for_status()
    response = client.post(
        "/accounts/login/",
        data={
            "username": username,
            "password": PASSWORD,
            "csrfmiddlewaretoken": client.cookies.get("csrftoken", ""),
        },
        headers={"Referer": f"{base_url}/accounts/login/"},
        follow_redirects=False,
    )
    if response.status_code != 302:
        raise RuntimeError(f"login failed for {username}")
    from tests.support.second_factor import pass_code_page

    pass_code_page(client)  # the admin's second factor
    return client


def _queries(username: str, url: str) -> int:
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from tests.support.second_factor import verify_client

    client = Client()
    user = get_user_model().objects.get(username=username)
    client.force_login(user)
    verify_client(client, user)  # as after the admin's second factor
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    if response.status_code != 200:
        raise RuntimeError(f"{url} answered {response.status_code}")
    return len(captured)


def _measure(base_url: str, repeats: int) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    clients = {name: _login(base_url, name) for name in (PERSON, ADMIN)}
    try:
        for page, (who, url) in _urls().items():
            client = clients[who]
            client.get(url).raise_for_status()  # warm
            times = []
            for _ in range(repeats):
                started = time.perf_counter()
                response = client.get(url)
                times.append((time.perf_counter() - started) * 1000)
                response.raise_for_status()
            figures[page] = {"time": summary(times, "ms"), "queries": _queries(who, url)}
    finally:
        for client in clients.values():
            client.close()
    return figures


def scale(run: Stack, plan: Any, context: dict[str, Any]) -> dict[str, Any]:
    from . import seed

    small, large = plan.scale_counts
    seeded: dict[str, float] = {}
    seeded[str(small)] = seed.seed_pending(
        small, person=context["person"], connection=context["connection"]
    )
    at_small = _measure(run.app_url, plan.page_repeats)
    seeded[str(large)] = seed.seed_pending(
        large, person=context["person"], connection=context["connection"]
    )
    _analyze()
    at_large = _measure(run.app_url, plan.page_repeats)
    figures: dict[str, Any] = {
        "counts": [small, large],
        "seed_seconds": seeded,
        "target_ratio": 1.5,
    }
    for page in PAGES:
        a, b = at_small[page], at_large[page]
        figures[page] = {
            str(small): a,
            str(large): b,
            "ratio": b["time"]["median"] / a["time"]["median"],
            "queries_fixed": a["queries"] == b["queries"],
        }
    return figures


def _analyze() -> None:
    """PostgreSQL: fresh planner statistics after the bulk load, as autovacuum would have
    after a while. (SQLite is left as the embedded setup runs it: nobody runs ANALYZE.)"""
    from django.db import connection

    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
