"""The history tab: the rounds I answered with their outcome, the calls I started with theirs.

Answers are delivered to the real peer inline (ImmediateBackend, transactional tests), so
the outcomes shown are what the server really answered.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection as db_connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from mrtrweb.calls import engine
from mrtrweb.calls.models import Call, Round
from mrtrweb.servers.models import Connection
from tests.inbox.support import (
    APPROVERS,
    answer_data,
    ask,
    browser,
    call_links,
    connection,
    copies_of,
    person,
    round_links,
    text,
    to_group,
    visible_text,
)

HISTORY = reverse("inbox:history")


@pytest.fixture(autouse=True)
def _inline_tasks(inline_tasks: None) -> None:
    """Every test here delivers answers inline."""


@pytest.mark.django_db(transaction=True)
def test_answered_rounds_and_started_calls_with_their_outcomes(fastmcp_peer: Any) -> None:
    ada, bea = person("ada"), person("bea", APPROVERS)
    group_conn = to_group(fastmcp_peer)
    accepted = ask(group_conn, ada, service="api")
    declined = ask(group_conn, ada, service="web")
    bea_web = browser(bea)
    for round, action in ((accepted, "accept"), (declined, "decline")):
        response = bea_web.post(round.get_absolute_url(), answer_data(action=action))
        assert response.status_code == 303
    failing = engine.start_call(
        connection=connection(fastmcp_peer),
        method=Call.Method.TOOL,
        target="fail",
        arguments={"message": "the disk is full"},
        user=ada,
    )
    unreachable = engine.start_call(
        connection=Connection.objects.create(name="gone", url="http://127.0.0.1:9/mcp"),
        method=Call.Method.TOOL,
        target="echo",
        arguments={"text": "hi"},
        user=ada,
    )
    assert unreachable.status == Call.Status.FAILED

    mine = browser(bea).get(HISTORY)
    assert round_links(mine) == {accepted.pk, declined.pk}
    shown = visible_text(mine)
    assert "Rounds I answered" in shown
    assert "Deploy api to staging? Answered" in shown
    assert "Deploy web to staging? Declined" in shown
    assert shown.count("Asked by ada") == 2
    # Each call's outcome in words: the one declined is not "completed" like the other.
    assert f"Call {accepted.call_id} : Answered" in shown
    assert f"Call {declined.call_id} : Declined" in shown
    assert "You have not started any call yet." in shown

    theirs = browser(ada).get(HISTORY)
    assert round_links(theirs) == set()
    assert call_links(theirs) >= {accepted.call_id, declined.call_id, failing.pk, unreachable.pk}
    shown = visible_text(theirs)
    assert "Deployed api to staging: 3 replicas, window tonight" in shown
    assert "Deployment of web declined" in shown
    assert "The tool reported an error: the disk is full" in shown
    assert unreachable.error.startswith("NotDelivered")
    assert unreachable.error[:60] in shown
    assert "You have not answered any round yet." in shown
    # Each started call with its own outcome badge.
    started = r'href="/calls/(\d+)/">Call \d+</a>.*?outcome-(\w+)'
    badges = dict(re.findall(started, text(theirs), re.S))
    assert badges[str(accepted.call_id)] == "answered"
    assert badges[str(declined.call_id)] == "declined"
    assert badges[str(failing.pk)] == "tool_error"
    assert badges[str(unreachable.pk)] == "failed"


@pytest.mark.django_db
def test_history_pages_each_list_on_its_own_and_costs_the_same_queries(
    fastmcp_peer: Any,
) -> None:
    ada = person("ada")
    round = ask(connection(fastmcp_peer), ada)
    Round.objects.filter(pk=round.pk).update(
        status=Round.Status.DELIVERED,
        answered_by=ada,
        answered_at=timezone.now(),
        answers={"approval": {"action": "decline"}},
    )
    round.refresh_from_db()
    web = browser(ada)

    def queries() -> int:
        with CaptureQueriesContext(db_connection) as captured:
            assert web.get(HISTORY).status_code == 200
        return len(captured)

    few = queries()
    now = timezone.now()
    for age, copy in enumerate(copies_of(round, 30), start=1):
        Round.objects.filter(pk=copy.pk).update(answered_at=now - timedelta(minutes=age))
    assert queries() == few

    page = web.get(HISTORY)
    assert len(round_links(page)) == 25 and len(call_links(page) - {round.call_id}) >= 24
    body = text(page)
    assert 'href="/inbox/history/?answered=2"' in body
    assert 'href="/inbox/history/?started=2"' in body
    # Paging one list keeps the other one's page.
    both = web.get(HISTORY, {"answered": 2, "started": 2})
    assert len(round_links(both)) == 6
    assert "/inbox/history/?answered=1&amp;started=2" in text(both)
    partial = web.get(
        HISTORY,
        {"answered": 2},
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="history-answered",
    )
    assert text(partial).lstrip().startswith('<section id="history-answered"')
    assert "Calls I started" not in text(partial)
    assert len(round_links(partial)) == 6
