"""The dashboard's lists of rounds and calls: filters, search, sort, pages, htmx fragments.

Database tests: the rounds are seeded with the ORM (no server involved); see test_actions.py
and test_audit.py for the protocol side.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.db import connection as db_connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from mrtrweb.calls.models import Call, Round
from mrtrweb.dashboard import listing
from mrtrweb.people.roles import ADMINS
from tests.dashboard.support import (
    client_for,
    make_admin,
    make_connection,
    make_round,
    make_user,
    row_ids,
    seed_rounds,
    text,
    visible_text,
)
from tests.factories import CallFactory

pytestmark = pytest.mark.django_db

ROUNDS = reverse("dashboard:rounds")
CALLS = reverse("dashboard:calls")
HTMX = {"HTTP_HX_REQUEST": "true", "HTTP_HX_CURRENT_URL": "http://testserver" + ROUNDS}


@pytest.fixture
def root() -> Any:
    return make_admin("root")


@pytest.fixture
def web(root: Any) -> Client:
    return client_for(root)


@pytest.fixture
def prod() -> Any:
    return make_connection(name="prod", title="Prod")


@pytest.fixture
def staging() -> Any:
    return make_connection(name="staging", title="Staging")


def ids(rounds: list[Round]) -> list[int]:
    return [r.pk for r in rounds]


# -- filters -----------------------------------------------------------------------------------


def test_pending_rounds_newest_first_by_default(web: Client, prod: Any, root: Any) -> None:
    pending = seed_rounds(3, connection=prod, starter=root)
    make_round(connection=prod, starter=root, status=Round.Status.DELIVERED)
    make_round(connection=prod, starter=root, status=Round.Status.CANCELLED)
    response = web.get(ROUNDS)
    assert response.status_code == 200
    assert row_ids(response) == ids(pending)[::-1]
    assert "Rounds 1 to 3 of 3" in visible_text(response)


def test_filter_by_status(web: Client, prod: Any, root: Any) -> None:
    made = {
        status: make_round(connection=prod, starter=root, status=status)
        for status in Round.Status.values
    }
    for status, round in made.items():
        assert row_ids(web.get(ROUNDS, {"status": status})) == [round.pk], status
    assert sorted(row_ids(web.get(ROUNDS, {"status": "all"}))) == sorted(ids(list(made.values())))


def test_filter_by_server_tool_assignee_and_group(
    web: Client, prod: Any, staging: Any, root: Any
) -> None:
    ann = make_user("ann")
    approvers = Group.objects.create(name="approvers")
    on_prod = make_round(connection=prod, starter=root, tool="approve_deploy")
    on_staging = make_round(connection=staging, starter=root, tool="purchase")
    to_ann = make_round(connection=staging, starter=root, tool="approve_deploy", assigned_user=ann)
    to_group = make_round(connection=prod, starter=root, tool="purchase", assigned_group=approvers)

    def listed(**query: str) -> list[int]:
        return sorted(row_ids(web.get(ROUNDS, query)))

    assert listed(server="prod") == sorted([on_prod.pk, to_group.pk])
    assert listed(server="staging") == sorted([on_staging.pk, to_ann.pk])
    assert listed(tool="purchase") == sorted([on_staging.pk, to_group.pk])
    assert listed(tool="approve_deploy", server="staging") == [to_ann.pk]
    assert listed(assignee="ann") == [to_ann.pk]
    assert listed(assignee="root") == sorted([on_prod.pk, on_staging.pk])
    assert listed(group="approvers") == [to_group.pk]
    assert listed(group="approvers", server="staging") == []


def test_filter_by_age(web: Client, prod: Any, root: Any) -> None:
    fresh = make_round(connection=prod, starter=root, age=timedelta(minutes=5))
    hours = make_round(connection=prod, starter=root, age=timedelta(hours=3))
    days = make_round(connection=prod, starter=root, age=timedelta(days=2))
    weeks = make_round(connection=prod, starter=root, age=timedelta(days=9))
    assert row_ids(web.get(ROUNDS, {"age": "1h"})) == [hours.pk, days.pk, weeks.pk]
    assert row_ids(web.get(ROUNDS, {"age": "1d"})) == [days.pk, weeks.pk]
    assert row_ids(web.get(ROUNDS, {"age": "7d"})) == [weeks.pk]
    assert row_ids(web.get(ROUNDS, {"age": ""})) == [fresh.pk, hours.pk, days.pk, weeks.pk]


def test_invalid_filters_list_nothing_and_say_why(web: Client, prod: Any, root: Any) -> None:
    make_round(connection=prod, starter=root)
    for query in ({"server": "nope"}, {"status": "sleeping"}, {"group": "nobody"}):
        response = web.get(ROUNDS, query)
        assert response.status_code == 200
        assert row_ids(response) == [], query
        assert "not valid" in visible_text(response)


# -- search ------------------------------------------------------------------------------------


def test_search_by_tool_name_and_message_text(web: Client, prod: Any, root: Any) -> None:
    deploy = make_round(
        connection=prod, starter=root, tool="approve_deploy", message="Ship it to PROD?"
    )
    buy = make_round(connection=prod, starter=root, tool="purchase", message="Pay 3 € now?")
    quoted = make_round(
        connection=prod, starter=root, tool="onboarding", message='Your "team" name?\nline 2'
    )

    def found(q: str) -> list[int]:
        return sorted(row_ids(web.get(ROUNDS, {"q": q})))

    assert found("deploy") == [deploy.pk]  # the tool's name
    assert found("PURCH") == [buy.pk]  # case-insensitive
    assert found("ship it") == [deploy.pk]  # the message
    assert found("3 €") == [buy.pk]  # non-ASCII, as stored in the JSON text
    assert found('"team"') == [quoted.pk]  # quotes, escaped in the JSON text
    assert found("nothing like this") == []
    # Search and filters combine.
    assert found("ship") == found("ship")
    assert sorted(row_ids(web.get(ROUNDS, {"q": "p", "tool": "purchase"}))) == [buy.pk]


def test_search_treats_like_wildcards_literally(web: Client, prod: Any, root: Any) -> None:
    make_round(connection=prod, starter=root, message="plain")
    percent = make_round(connection=prod, starter=root, message="100% sure?")
    assert row_ids(web.get(ROUNDS, {"q": "%"})) == [percent.pk]
    assert row_ids(web.get(ROUNDS, {"q": "_"})) == [
        r.pk for r in Round.objects.filter(call__target__contains="_").order_by("-created_at")
    ]


# -- sort --------------------------------------------------------------------------------------


def test_sort_by_created_deadline_and_status(web: Client, prod: Any, root: Any) -> None:
    # Created: a oldest ... c newest; deadlines in the opposite order of a plain lifetime.
    a = make_round(
        connection=prod, starter=root, age=timedelta(hours=3), deadline=timedelta(hours=5)
    )
    b = make_round(
        connection=prod, starter=root, age=timedelta(hours=2), deadline=timedelta(hours=1)
    )
    c = make_round(
        connection=prod, starter=root, age=timedelta(hours=1), deadline=timedelta(hours=9)
    )
    assert row_ids(web.get(ROUNDS)) == [c.pk, b.pk, a.pk]
    assert row_ids(web.get(ROUNDS, {"sort": "created"})) == [a.pk, b.pk, c.pk]
    # Deadlines: b at -1h, a at +2h, c at +8h.
    assert row_ids(web.get(ROUNDS, {"sort": "deadline"})) == [b.pk, a.pk, c.pk]
    assert row_ids(web.get(ROUNDS, {"sort": "-deadline"})) == [c.pk, a.pk, b.pk]

    expired = make_round(connection=prod, starter=root, status=Round.Status.EXPIRED)
    delivered = make_round(connection=prod, starter=root, status=Round.Status.DELIVERED)
    by_status = row_ids(web.get(ROUNDS, {"status": "all", "sort": "status"}))
    assert by_status == [delivered.pk, expired.pk, c.pk, b.pk, a.pk]
    assert row_ids(web.get(ROUNDS, {"status": "all", "sort": "-status"})) == [
        c.pk,
        b.pk,
        a.pk,
        expired.pk,
        delivered.pk,
    ]


def test_column_headers_toggle_the_sort_and_keep_the_filters(
    web: Client, prod: Any, root: Any
) -> None:
    make_round(connection=prod, starter=root)
    body = text(web.get(ROUNDS, {"server": "prod", "page": "1"}))
    # Newest first now, so "Asked" sorts oldest first next; the page number is dropped.
    assert header_link(body, "Asked") == "/dashboard/rounds/?server=prod&amp;sort=created"
    assert header_link(body, "Status") == "/dashboard/rounds/?server=prod&amp;sort=status"
    assert 'aria-sort="descending"><a' in body
    body = text(web.get(ROUNDS, {"sort": "created"}))
    assert header_link(body, "Asked") == "/dashboard/rounds/?sort=-created"
    assert 'aria-sort="ascending"><a' in body


def header_link(body: str, label: str) -> str:
    import re

    match = re.search(rf'<th scope="col" aria-sort="\w+"><a href="([^"]+)"[^>]*>{label}</a>', body)
    assert match, label
    return match.group(1)


# -- pages -------------------------------------------------------------------------------------


def test_pages_of_fifty_with_next_and_previous(web: Client, prod: Any, root: Any) -> None:
    rounds = seed_rounds(120, connection=prod, starter=root)
    newest_first = ids(rounds)[::-1]
    first = web.get(ROUNDS)
    assert row_ids(first) == newest_first[:50]
    assert "Rounds 1 to 50 of 120" in visible_text(first)
    assert "Page 1 of 3" in visible_text(first)
    assert 'rel="next" href="/dashboard/rounds/?page=2"' in text(first)
    assert 'rel="prev"' not in text(first)
    second = web.get(ROUNDS, {"page": "2"})
    assert row_ids(second) == newest_first[50:100]
    assert 'rel="prev"' in text(second)
    last = web.get(ROUNDS, {"page": "3"})
    assert row_ids(last) == newest_first[100:]
    assert 'rel="next"' not in text(last)
    assert "Rounds 101 to 120 of 120" in visible_text(last)
    # Past the end, and nonsense, are harmless.
    assert row_ids(web.get(ROUNDS, {"page": "9"})) == []
    assert row_ids(web.get(ROUNDS, {"page": "x"})) == newest_first[:50]
    assert row_ids(web.get(ROUNDS, {"page": "-4"})) == newest_first[:50]
    # Pages follow the filters.
    oldest = web.get(ROUNDS, {"sort": "created", "page": "3"})
    assert row_ids(oldest) == ids(rounds)[100:]


def test_the_count_stops_at_the_cap(
    web: Client, prod: Any, root: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(listing, "COUNT_CAP", 60)
    seed_rounds(70, connection=prod, starter=root)
    first = visible_text(web.get(ROUNDS))
    assert "Rounds 1 to 50 of more than 60" in first
    assert "Page 1 " in first and "Page 1 of" not in first
    # The next pages are still reachable.
    assert len(row_ids(web.get(ROUNDS, {"page": "2"}))) == 20


# -- htmx and no-JS ----------------------------------------------------------------------------


def test_htmx_gets_the_results_fragment_and_browsers_the_page(
    web: Client, prod: Any, root: Any
) -> None:
    make_round(connection=prod, starter=root)
    whole = web.get(ROUNDS)
    assert "<html" in text(whole)
    assert "HX-Request" in whole["Vary"]
    # Without JavaScript: a plain GET form, links with hrefs, a POST form with its token.
    assert '<form class="filters" method="get" action="/dashboard/rounds/"' in text(whole)
    assert 'hx-get="/dashboard/rounds/"' in text(whole)
    assert 'hx-push-url="true"' in text(whole)
    assert "csrfmiddlewaretoken" in text(whole)

    fragment = web.get(ROUNDS, {"server": "prod"}, **HTMX)
    assert "<html" not in text(fragment)
    assert text(fragment).lstrip().startswith('<form id="round-results"')
    assert "HX-Request" in fragment["Vary"]
    assert len(row_ids(fragment)) == 1
    # A history restore (htmx lost its cache) needs the whole page.
    restore = web.get(ROUNDS, **HTMX, HTTP_HX_HISTORY_RESTORE_REQUEST="true")
    assert "<html" in text(restore)


def test_rows_show_what_an_admin_needs(web: Client, prod: Any, root: Any) -> None:
    ann = make_user("ann")
    approvers = Group.objects.create(name="approvers")
    make_round(
        connection=prod,
        starter=ann,
        tool="approve_deploy",
        message="Deploy <b>api</b>?\nMore detail",
        assigned_group=approvers,
        claimed_by=root,
        request_state="SECRET-STATE-" + "x" * 40,
    )
    response = web.get(ROUNDS)
    shown = visible_text(response)
    for expected in (
        "Prod",
        "approve_deploy",
        "Deploy <b>api</b>?",
        "group approvers",
        "claimed by root",
        "started by ann",
    ):
        assert expected in shown, expected
    assert "More detail" not in shown  # the first line only
    assert "<b>api</b>" not in text(response)  # escaped
    assert "SECRET-STATE" not in text(response)
    assert "Release" in shown and "Cancel" in shown and "Expire" in shown


# -- calls -------------------------------------------------------------------------------------


def test_calls_filters_search_sort_and_pages(
    web: Client, prod: Any, staging: Any, root: Any
) -> None:
    from django.utils import timezone

    ann = make_user("ann")
    now = timezone.now()
    done = CallFactory(
        connection=prod,
        started_by=root,
        target="approve_deploy",
        status=Call.Status.COMPLETED,
        created_at=now - timedelta(hours=3),
        finished_at=now - timedelta(hours=1),
    )
    failed = CallFactory(
        connection=staging,
        started_by=ann,
        target="purchase",
        status=Call.Status.FAILED,
        error="NotDelivered: connection refused",
        created_at=now - timedelta(hours=2),
        finished_at=now - timedelta(hours=2),
    )
    waiting = CallFactory(
        connection=prod,
        started_by=ann,
        target="approve_deploy",
        status=Call.Status.WAITING,
        created_at=now - timedelta(minutes=1),
    )

    def listed(**query: str) -> list[int]:
        return row_ids(web.get(CALLS, query), "call")

    assert listed() == [waiting.pk, failed.pk, done.pk]
    assert listed(status="failed") == [failed.pk]
    assert listed(server="prod") == [waiting.pk, done.pk]
    assert listed(tool="approve_deploy") == [waiting.pk, done.pk]
    assert listed(starter="ann") == [waiting.pk, failed.pk]
    assert listed(age="1h") == [failed.pk, done.pk]
    assert listed(q="purch") == [failed.pk]
    assert listed(q="refused") == [failed.pk]  # the error text
    assert listed(q=str(done.pk)) == [done.pk]
    assert listed(sort="created") == [done.pk, failed.pk, waiting.pk]
    assert listed(sort="-finished") == [done.pk, failed.pk, waiting.pk]
    assert listed(sort="status") == [done.pk, failed.pk, waiting.pk]
    assert listed(server="nope") == []

    for i in range(55):
        CallFactory(connection=prod, started_by=root, created_at=now - timedelta(days=1, minutes=i))
    assert len(listed()) == 50
    assert len(listed(page="2")) == 8
    body = text(web.get(CALLS))
    assert "Calls 1 to 50 of 58" in visible_text(web.get(CALLS))
    assert f'href="{reverse("dashboard:call_audit", kwargs={"pk": waiting.pk})}"' in body
    fragment = web.get(CALLS, {"status": "failed"}, HTTP_HX_REQUEST="true")
    assert text(fragment).lstrip().startswith('<div id="call-results"')


# -- no N+1 ------------------------------------------------------------------------------------


def queries_for(client: Client, url: str, query: dict[str, str] | None = None, **extra: Any) -> int:
    client.get(url, query or {}, **extra)  # warm: the session, permissions, content types
    with CaptureQueriesContext(db_connection) as captured:
        response = client.get(url, query or {}, **extra)
    assert response.status_code == 200
    return len(captured.captured_queries)


@pytest.mark.parametrize(
    "query",
    [
        {},
        {"status": "all", "sort": "deadline"},
        {"q": "question", "server": "prod", "group": "approvers"},
        {"assignee": "ann", "age": "1h"},
    ],
)
def test_the_number_of_queries_does_not_grow_with_the_rounds(
    web: Client, prod: Any, root: Any, query: dict[str, str]
) -> None:
    ann = make_user("ann")
    approvers = Group.objects.create(name="approvers")

    def seed(n: int) -> None:
        for i, round in enumerate(seed_rounds(n, connection=prod, starter=root)):
            # Every related row differs, so a lazy lookup would show up as extra queries.
            if i % 3 == 0:
                Round.objects.filter(pk=round.pk).update(assigned_user=ann, claimed_by=root)
            elif i % 3 == 1:
                Round.objects.filter(pk=round.pk).update(
                    assigned_user=None, assigned_group=approvers, claimed_by=ann
                )

    seed(5)
    few = queries_for(web, ROUNDS, query)
    few_htmx = queries_for(web, ROUNDS, query, **HTMX)
    seed(45)
    assert Round.objects.count() == 50
    assert queries_for(web, ROUNDS, query) == few
    assert queries_for(web, ROUNDS, query, **HTMX) == few_htmx


def test_the_calls_list_queries_do_not_grow_either(web: Client, prod: Any, root: Any) -> None:
    seed_rounds(5, connection=prod, starter=root)
    few = queries_for(web, CALLS)
    for i in range(45):
        CallFactory(connection=prod, target=f"tool{i}")  # each by a person of its own
    assert queries_for(web, CALLS) == few


# -- who may look --------------------------------------------------------------------------------


def test_only_admins_get_in(prod: Any, root: Any) -> None:
    round = make_round(connection=prod, starter=root)
    urls = [
        ROUNDS,
        CALLS,
        reverse("dashboard:call_audit", kwargs={"pk": round.call_id}),
        reverse("dashboard:home"),
    ]
    stranger = Client()
    for url in urls:
        response = stranger.get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith(reverse("login")), url
    # htmx asks for a full navigation to the sign-in page instead of a swap.
    swapped = stranger.get(ROUNDS, HTTP_HX_REQUEST="true")
    assert swapped.status_code == 200
    assert swapped["HX-Redirect"].startswith(reverse("login"))

    for user in (
        make_user("eve", "End users"),
        make_user("olga", "Operators"),
        make_user("staffer", is_staff=True),
    ):
        client = client_for(user)
        for url in urls:
            assert client.get(url).status_code == 403, (user, url)
        assert (
            client.post(
                reverse("dashboard:bulk"),
                {"action": "expire", "rounds": [round.pk], "confirmed": "1"},
            ).status_code
            == 403
        )
    round.refresh_from_db()
    assert round.status == Round.Status.PENDING

    for admin in (make_user("adm", ADMINS), make_user("su", is_superuser=True)):
        client = client_for(admin)
        for url in urls[:3]:
            assert client.get(url).status_code == 200, (admin, url)


def test_the_header_links_admins_to_the_dashboard(web: Client, prod: Any, root: Any) -> None:
    assert f'href="{ROUNDS}"' in text(web.get(reverse("core:home")))
    eve = client_for(make_user("eve", "End users"))
    assert f'href="{ROUNDS}"' not in text(eve.get(reverse("core:home")))
