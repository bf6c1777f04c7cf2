"""What P3 (docs/performance.md) measures stays true: with many waiting rounds, the header's count
and the inbox's count stop at their caps, say so, and every page costs the same queries.

The rounds are seeded the way the bench seeds them (bench.seed.seed_pending), on a connection
whose catalog is the bench server's single tool as listed; nothing here talks to a server.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import connection as db
from django.test import Client
from django.test.utils import CaptureQueriesContext

from bench.seed import seed_pending
from mrtrweb.calls.models import Round
from mrtrweb.core import context_processors
from mrtrweb.inbox import views as inbox
from mrtrweb.servers.models import Connection

pytestmark = pytest.mark.django_db

TOOL = {"name": "confirm", "inputSchema": {"type": "object", "properties": {}}}


@pytest.fixture
def person() -> Any:
    return get_user_model().objects.create_user("pat", password="pw-pat-123")


@pytest.fixture
def server() -> Connection:
    return Connection.objects.create(
        name="bench", url="http://127.0.0.1:9/mcp", catalog={"tools": [TOOL]}
    )


def _get(user: Any, url: str) -> tuple[str, int]:
    client = Client()
    client.force_login(user)
    client.get(url)  # sessions, permissions and templates warm
    with CaptureQueriesContext(db) as queries:
        response = client.get(url)
    assert response.status_code == 200
    return response.content.decode(), len(queries)


def test_counts_stop_at_their_caps_and_pages_cost_the_same(
    person: Any, server: Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(inbox, "COUNT_CAP", 30)
    monkeypatch.setattr(context_processors, "INBOX_COUNT_CAP", 9)

    seed_pending(5, person=person, connection=server)
    few, few_queries = _get(person, "/inbox/")
    assert "5 waiting for you" in few
    assert 'aria-label="5 waiting"' in few
    assert "Page 1 of" not in few  # one page: no pager

    seed_pending(80, person=person, connection=server)
    assert Round.objects.filter(status=Round.Status.PENDING).count() == 80
    many, many_queries = _get(person, "/inbox/")
    # Counted as far as the cap or the page after the one shown (2 pages of 25), whichever
    # is further.
    assert "More than 50 waiting for you" in many
    assert 'aria-label="9+ waiting"' in many
    assert many_queries == few_queries
    # Paging on past the cap still works: the count reaches the page asked for and the next.
    page2, _ = _get(person, "/inbox/?page=2")
    assert "Page 2<" in page2 and 'rel="prev"' in page2 and 'rel="next"' in page2
    last, _ = _get(person, "/inbox/?page=4")
    assert "Page 4 of 4" in last and 'rel="next"' not in last


def test_group_rounds_count_once_in_the_header(person: Any, server: Connection) -> None:
    team = Group.objects.create(name="Approvers")
    person.groups.add(team)
    seed_pending(3, person=person, connection=server)
    # Routed to the user and to their group at once: still one round waiting.
    Round.objects.filter(pk=Round.objects.order_by("pk").first().pk).update(assigned_group=team)
    # Routed to the group only, and claimed by someone else: not waiting for this user.
    other = get_user_model().objects.create_user("sam")
    last = Round.objects.order_by("pk").last()
    Round.objects.filter(pk=last.pk).update(
        assigned_user=None, assigned_group=team, claimed_by=other
    )
    assert context_processors._waiting(person) == 2
