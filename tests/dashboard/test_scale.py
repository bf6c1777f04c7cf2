"""A scale smoke test: 20,000 rounds, and the first pages cost what they cost with five.

Timings are printed, not asserted tightly (this runs on a two-core machine next to others).
"""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.db import connection as db_connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from mrtrweb.calls.models import Call, Round
from tests.dashboard.support import (
    client_for,
    form_request,
    make_admin,
    make_connection,
    make_user,
    row_ids,
)

pytestmark = pytest.mark.django_db

ROUNDS = reverse("dashboard:rounds")
CALLS = reverse("dashboard:calls")
TOTAL = 20_000
PER_CALL = 10


def bulk_seed(conn: Any, starters: list[Any], group: Group, offset: int, n: int) -> None:
    """``n`` rounds on ``n / PER_CALL`` calls, a tenth of them answered, some for a group."""
    now = timezone.now()
    calls = Call.objects.bulk_create(
        Call(
            connection=conn,
            method=Call.Method.TOOL,
            target=f"tool_{(offset + i) % 7}",
            started_by=starters[i % len(starters)],
            status=Call.Status.WAITING,
            created_at=now - timedelta(seconds=offset + i),
        )
        for i in range(n // PER_CALL)
    )
    rounds = []
    for c, call in enumerate(calls):
        for index in range(1, PER_CALL + 1):
            i = c * PER_CALL + index
            rounds.append(
                Round(
                    call=call,
                    index=index,
                    input_requests={"q": form_request(f"Question {offset + i}: go ahead?")},
                    summary=f"Question {offset + i}: go ahead?",
                    status=Round.Status.DELIVERED if i % 10 == 0 else Round.Status.PENDING,
                    assigned_user=None if i % 4 == 0 else call.started_by,
                    assigned_group=group if i % 4 == 0 else None,
                    created_at=now - timedelta(seconds=offset + i),
                    expires_at=now + timedelta(minutes=10, seconds=i),
                )
            )
    Round.objects.bulk_create(rounds, batch_size=2000)


def measure(client: Client, url: str, query: dict[str, str]) -> tuple[int, float, Any]:
    client.get(url, query)
    started = time.perf_counter()
    with CaptureQueriesContext(db_connection) as captured:
        response = client.get(url, query)
    elapsed = time.perf_counter() - started
    assert response.status_code == 200
    return len(captured.captured_queries), elapsed, response


QUERIES = [
    {},
    {"sort": "deadline"},
    {"status": "all", "sort": "status"},
    {"group": "approvers"},
    {"assignee": "u1", "age": "1h"},
    {"q": "question 19"},
    {"page": "150"},
]


def test_twenty_thousand_rounds(capsys: pytest.CaptureFixture[str]) -> None:
    admin = make_admin("root")
    conn = make_connection(name="prod", title="Prod")
    starters = [make_user(f"u{i}") for i in range(20)]
    group = Group.objects.create(name="approvers")
    client = client_for(admin)

    bulk_seed(conn, starters, group, offset=4_000, n=50)
    small = {}
    small_ms = {}
    for query in QUERIES:
        count, elapsed, _ = measure(client, ROUNDS, query)
        small[str(query)], small_ms[str(query)] = count, elapsed * 1000
    small_calls = measure(client, CALLS, {})[0]

    started = time.perf_counter()
    bulk_seed(conn, starters, group, offset=0, n=TOTAL - 50)
    seeded = time.perf_counter() - started
    assert Round.objects.count() == TOTAL

    lines = [f"seeded {TOTAL} rounds in {seeded:.1f}s"]
    for query in QUERIES:
        count, elapsed, response = measure(client, ROUNDS, query)
        assert count == small[str(query)], query
        lines.append(
            f"rounds {query or '(default)'}: {count} queries, {elapsed * 1000:.0f} ms"
            f" (with 50 rounds: {small_ms[str(query)]:.0f} ms), {len(row_ids(response))} rows"
        )
        assert elapsed < 10, query  # generous: only catches a pathological plan
    count, elapsed, response = measure(client, CALLS, {})
    assert count == small_calls
    lines.append(f"calls (default): {count} queries, {elapsed * 1000:.0f} ms")
    _, _, response = measure(client, ROUNDS, {})
    assert len(row_ids(response)) == 50
    assert "of more than 10000" in response.content.decode()
    with capsys.disabled():
        print("\n" + "\n".join(lines))
