"""What one person's whole flow costs in SQL queries stays what it is.

The flow of bench/flow.py (the start POST, the round page, the answer POST, the delivery of
the answer) against the bench server itself, run as its own process on loopback: each page of
the flow is pinned to at most the queries it makes today, so that a query added to every
request (a permission lookup, a header count, a re-read row) shows up here, not months later
in the benchmark. The counts are the bench's own (bench/flow.py meters them the same way).
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from bench import flow, seed
from bench.stack import HOST, REPO_ROOT, free_port, reachable
from tests.calls.engine.delivery_support import DATABASE_QUEUE

pytestmark = pytest.mark.django_db(transaction=True)

# At most this many queries per phase (bench/flow.py's phases). Lower them as they come down.
MOST = {"start": 26, "page": 4, "answer": 8, "delivery": 13}


@pytest.fixture(scope="module")
def bench_server() -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "bench.server", "--port", str(port)],
        cwd=REPO_ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while not reachable(port):
            assert process.poll() is None and time.monotonic() < deadline, "bench server"
            time.sleep(0.05)
        yield f"http://{HOST}:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture(autouse=True)
def _as_in_production(settings: Any) -> None:
    # The answer's own process sends it (calls/handoff.py); bench/flow.py runs that inline.
    settings.TASKS = DATABASE_QUEUE
    settings.MRTRWEB_DELIVER_ON_ANSWER = True


def test_each_phase_of_the_flow_makes_at_most_its_queries(bench_server: str) -> None:
    seed.prepare(bench_server)
    one = flow.Flow()
    with flow.inline_handoff(lambda: one.meter):
        one.once()  # warm: the catalog's, the policy's and the templates' first reads
        measured = one.once()
    counts = {phase: measured.count.get(phase, 0) for phase in flow.PHASES}
    over = {p: f"{counts[p]} > {MOST[p]}" for p in flow.PHASES if counts[p] > MOST[p]}
    listing = "\n".join(f"{p}: {q[:160]}" for p in flow.PHASES for q in measured.sql.get(p, []))
    assert not over, f"more queries than pinned: {over}\n{listing}"
    # Every phase ran (a flow that stopped early would pass the pins trivially).
    assert all(counts.values()), counts


def test_the_baselines_send_the_arguments_the_app_sends(bench_server: str) -> None:
    """The raw retry and fastmcp's client (bench/floor.py) call the bench tool with
    ``stack.ARGUMENTS``: what the app's start form sends, so the server does the same work for
    the baselines as for the app (an argument costs the bench server about 0.45 ms a call)."""
    import json

    from bench.stack import ARGUMENTS
    from mrtrweb.calls.models import Call

    seed.prepare(bench_server)
    one = flow.Flow()
    with flow.inline_handoff(lambda: one.meter):
        one.once(counted=False)
    assert json.loads(Call.objects.latest("pk").arguments_json) == ARGUMENTS


def test_the_flow_s_queries_are_told_apart_and_its_floor_is_the_sign_in(
    bench_server: str, settings: Any
) -> None:
    """What holds the flow's query count back is measured beside it: each request's sign-in,
    the transactions' brackets, and the app's own; the floor (the same three requests to the
    trivial view) makes the sign-in's queries and nothing else."""
    settings.ROOT_URLCONF = "bench.urls"  # the app's URLs and the floor's trivial view
    seed.prepare(bench_server)
    one = flow.Flow()
    with flow.inline_handoff(lambda: one.meter):
        one.once()
        measured = one.once()
    floor = one.floor()
    kinds = flow.kinds(measured)
    assert sum(kinds.values()) == sum(measured.count.values())
    # Three signed-in requests, each reading its session, and its user with their permissions.
    assert kinds["sign_in"] == 6, kinds
    # The start, the answer and the delivery each write in transactions of their own.
    assert kinds["transaction"] >= 6 and kinds["transaction"] % 2 == 0, kinds
    assert kinds["app"] > 0
    assert list(floor.count) == list(flow.FLOOR_PHASES)
    assert flow.kinds(floor) == {"sign_in": 6, "transaction": 0, "app": 0}
    assert sum(floor.cpu.values()) > 0


@pytest.mark.parametrize(
    ("sql", "kind"),
    [
        ('SELECT "django_session"."session_key" FROM "django_session" WHERE x', "sign_in"),
        ('SELECT "auth_user"."id" FROM "auth_user" WHERE "auth_user"."id" = 1', "sign_in"),
        (
            '(SELECT "auth_user_user_permissions"."user_id" FROM "auth_user_user_permissions"'
            ' INNER JOIN "auth_permission" ON (1) WHERE x) UNION (SELECT 1)',
            "sign_in",
        ),
        ("BEGIN IMMEDIATE", "transaction"),
        ("COMMIT", "transaction"),
        ('SAVEPOINT "s1"', "transaction"),
        ('RELEASE SAVEPOINT "s1"', "transaction"),
        # A join to the users' table is the app's, not the sign-in's.
        (
            'SELECT "servers_toolexposure"."id" FROM "servers_toolexposure" LEFT OUTER JOIN'
            ' "auth_user" ON (1) WHERE x',
            "app",
        ),
        ('UPDATE "auth_user" SET "last_login" = x WHERE "auth_user"."id" = 1', "app"),
        ('INSERT INTO "calls_call" ("status") VALUES (\'running\')', "app"),
    ],
)
def test_kind_of(sql: str, kind: str) -> None:
    assert flow.kind_of(sql) == kind


def test_a_timed_flow_counts_nothing_and_times_every_phase(bench_server: str) -> None:
    """The CPU figures come from flows whose queries are not counted: counting puts Django's
    debug cursor on the connection, which the app does not have in production."""
    from django.db import connection

    seed.prepare(bench_server)
    one = flow.Flow()
    with flow.web_loop(), flow.inline_handoff(lambda: one.meter):
        one.once()
        timed = one.once(counted=False)
        # Live updates went to the running loop, as to a web server's.
        assert flow._loop_threads()["live_loop"] is not None
    assert not connection.force_debug_cursor
    assert timed.count == {} and timed.sql == {}
    assert list(timed.cpu) == list(flow.PHASES)
    assert all(seconds > 0 for seconds in timed.cpu.values()), timed.cpu
    assert flow._loop_threads()["live_loop"] is None  # and it stopped with the block
