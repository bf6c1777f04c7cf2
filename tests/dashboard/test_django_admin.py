"""Django's admin for support work: calls, rounds and events read-only; connections with
write-only secrets. No requestState and no secret ever reaches a page."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib import admin
from django.contrib.admin.models import LogEntry
from django.db import connection as db_connection
from django.test import Client, RequestFactory
from django.urls import reverse

from mrtrweb.calls.models import Call, Event, Round
from mrtrweb.people.roles import ADMINS, OPERATORS
from mrtrweb.servers.models import Connection, ToolExposure
from tests.dashboard.support import (
    client_for,
    make_connection,
    make_round,
    make_user,
    text,
)
from tests.support.factories import wide

pytestmark = pytest.mark.django_db

STATE = "v1.SEALED-STATE-" + "q" * 60


@pytest.fixture
def support() -> Any:
    """An admin who may enter Django's admin (staff)."""
    return make_user("sam", ADMINS, is_staff=True)


@pytest.fixture
def round(support: Any) -> Round:
    round = make_round(connection=make_connection(), starter=support, request_state=STATE)
    Event.objects.create(
        call=round.call,
        round=round,
        kind="round_parked",
        detail={"request_state_sha256": round.request_state_sha256},
    )
    return round


def admin_url(model: Any, view: str, *args: Any) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{view}", args=args)


def test_calls_rounds_and_events_are_listed_and_viewed(support: Any, round: Round) -> None:
    web = client_for(support)
    index = text(web.get(reverse("admin:index")))
    for model in (Call, Round, Event):
        assert admin_url(model, "changelist") in index
        assert web.get(admin_url(model, "changelist")).status_code == 200, model
    event = Event.objects.get()
    for model, pk in ((Call, round.call_id), (Round, round.pk), (Event, event.pk)):
        page = web.get(admin_url(model, "change", pk))
        assert page.status_code == 200, model
        assert 'name="_save"' not in text(page), model  # view only


def test_nothing_is_added_changed_or_deleted(support: Any, round: Round) -> None:
    web = client_for(support)
    superuser = client_for(make_user("su", is_superuser=True, is_staff=True))
    event = Event.objects.get()
    for client in (web, superuser):
        for model, pk in ((Call, round.call_id), (Round, round.pk), (Event, event.pk)):
            assert client.get(admin_url(model, "add")).status_code == 403, model
            assert client.post(admin_url(model, "change", pk), {}).status_code == 403, model
            assert client.get(admin_url(model, "delete", pk)).status_code == 403, model
            changelist = text(client.get(admin_url(model, "changelist")))
            assert "delete_selected" not in changelist
    assert Event.objects.count() == 1
    request = RequestFactory().get("/")
    request.user = superuser_user = make_user("su2", is_superuser=True, is_staff=True)
    assert superuser_user.is_superuser
    event_admin = admin.site._registry[Event]
    assert event_admin.has_change_permission(request, event) is False
    assert event_admin.has_delete_permission(request, event) is False
    assert event_admin.has_add_permission(request) is False


def test_a_round_shows_its_state_digest_never_the_state(support: Any, round: Round) -> None:
    web = client_for(support)
    page = text(web.get(admin_url(Round, "change", round.pk)))
    assert round.request_state_sha256 in page
    assert STATE not in page and "SEALED-STATE" not in page
    assert 'name="request_state"' not in page
    for model in (Round, Event):
        assert "SEALED-STATE" not in text(web.get(admin_url(model, "changelist")))
    assert "SEALED-STATE" not in text(web.get(admin_url(Event, "change", Event.objects.get().pk)))


def test_the_round_list_does_not_query_per_row(support: Any) -> None:
    from django.test.utils import CaptureQueriesContext

    web = client_for(support)
    conn = make_connection()

    def queries() -> int:
        web.get(admin_url(Round, "changelist"))
        with CaptureQueriesContext(db_connection) as captured:
            assert web.get(admin_url(Round, "changelist")).status_code == 200
        return len(captured.captured_queries)

    for _ in range(3):
        make_round(connection=conn, starter=make_user(f"a{Round.objects.count()}"))
    few = queries()
    for _ in range(20):
        make_round(connection=conn, starter=make_user(f"a{Round.objects.count()}"))
    assert queries() == few


def test_people_without_a_role_do_not_see_calls(round: Round) -> None:
    staff = client_for(make_user("staffer", is_staff=True))
    assert staff.get(admin_url(Round, "changelist")).status_code == 403
    assert staff.get(admin_url(Event, "changelist")).status_code == 403


# -- connections -------------------------------------------------------------------------------


@pytest.fixture
def operator() -> Any:
    return make_user("olga", OPERATORS, is_staff=True)


def connection_form(conn: Connection, **changes: Any) -> dict[str, Any]:
    data = {
        "name": conn.name,
        "title": conn.title,
        "url": conn.url,
        "enabled": "on",
        "connect_timeout": "10",
        "read_timeout": "60",
        "max_response_bytes": "10000000",
        "state_lifetime": "00:10:00",
        "max_rounds": "10",
        "answer_deadline": "60",
        "answer_deadline_max": "600",
        "era": "",
        "routing": "caller",
        "route_user": "",
        "route_group": "",
        "exposures-TOTAL_FORMS": "0",
        "exposures-INITIAL_FORMS": "0",
        "exposures-MIN_NUM_FORMS": "0",
        "exposures-MAX_NUM_FORMS": "1000",
    }
    data.update(changes)
    return data


def test_connection_secrets_are_write_only(operator: Any) -> None:
    conn = make_connection(
        name="vault",
        title="Vault",
        bearer_token="TOKEN-s3cr3t-value",
        headers={"X-Api-Key": "HEADER-s3cr3t"},
    )
    web = client_for(operator)
    url = admin_url(Connection, "change", conn.pk)
    for page in (web.get(url), web.get(admin_url(Connection, "changelist"))):
        assert page.status_code == 200
        body = text(page)
        assert "TOKEN-s3cr3t" not in body and "HEADER-s3cr3t" not in body
    assert "X-Api-Key" not in text(web.get(url))
    assert text(web.get(url)).count(">set<") == 2

    # Saving other fields keeps the secrets.
    saved = web.post(url, connection_form(conn, title="Vault"))
    assert saved.status_code == 302, saved.content.decode()[:3000]
    conn.refresh_from_db()
    assert (conn.title, conn.bearer_token, conn.headers) == (
        "Vault",
        "TOKEN-s3cr3t-value",
        {"X-Api-Key": "HEADER-s3cr3t"},
    )
    # Replacing them; an invalid headers value is refused without being shown back.
    refused = web.post(url, connection_form(conn, new_headers='["HEADER-n3w"]'))
    assert refused.status_code == 200
    assert "HEADER-n3w" not in text(refused)
    web.post(
        url,
        connection_form(
            conn, new_bearer_token="TOKEN-n3w", new_headers='{"X-Other": "HEADER-n3w"}'
        ),
    )
    conn.refresh_from_db()
    assert (conn.bearer_token, conn.headers) == ("TOKEN-n3w", {"X-Other": "HEADER-n3w"})
    with db_connection.cursor() as cursor:
        cursor.execute("SELECT bearer_token FROM servers_connection WHERE id = %s", [conn.pk])
        assert "TOKEN-n3w" not in cursor.fetchone()[0]
    # Clearing them.
    web.post(url, connection_form(conn, clear_bearer_token="on", clear_headers="on"))
    conn.refresh_from_db()
    assert (conn.bearer_token, conn.headers) == ("", None)
    assert text(web.get(url)).count(">not set<") == 2
    # The change history names fields, never values.
    history = " ".join(str(e.get_change_message()) for e in LogEntry.objects.all())
    assert "TOKEN" not in history and "HEADER" not in history


def test_operators_edit_exposure_and_nobody_deletes_a_connection(operator: Any) -> None:
    conn = make_connection(name="prod", title="Prod")
    exposure = ToolExposure.objects.create(connection=conn, tool_name="deploy")
    web = client_for(operator)
    assert web.get(admin_url(ToolExposure, "changelist")).status_code == 200
    response = web.post(
        admin_url(ToolExposure, "change", exposure.pk),
        {
            "connection": conn.pk,
            "tool_name": "deploy",
            "exposed": "on",
            "routing": "",
            "route_user": "",
            "route_group": "",
        },
    )
    assert response.status_code == 302
    exposure.refresh_from_db()
    assert exposure.exposed
    # A routing policy must name its target (the model's own validation).
    refused = web.post(
        admin_url(ToolExposure, "change", exposure.pk),
        {"connection": conn.pk, "tool_name": "deploy", "routing": "group", "route_group": ""},
    )
    assert refused.status_code == 200
    assert "Name the group" in text(refused)
    assert web.get(admin_url(Connection, "delete", conn.pk)).status_code == 403
    assert web.get(admin_url(ToolExposure, "delete", exposure.pk)).status_code == 403
    # Admins may look at connections but not change them.
    looker = client_for(make_user("sam", ADMINS, is_staff=True))
    assert looker.get(admin_url(Connection, "changelist")).status_code == 200
    assert (
        looker.post(admin_url(Connection, "change", conn.pk), connection_form(conn)).status_code
        == 403
    )
    assert Client().get(admin_url(Connection, "changelist")).status_code == 302


def test_the_admin_site_refuses_a_username_that_reads_as_someone_elses() -> None:
    """Adding or renaming a person on Django's admin obeys the dashboard's rule."""
    from django.contrib.auth import get_user_model

    people = get_user_model()
    root = people.objects.create_superuser("root", "root@example.org", "pw-root-123")
    bob = make_user("bob")
    eve = make_user("eve")
    web = client_for(root)

    added = web.post(
        admin_url(people, "add"),
        {"username": wide("BOB"), "password1": "", "password2": "", "usable_password": "false"},
    )
    assert added.status_code == 200
    assert "Someone has this username already." in text(added)
    assert people.objects.count() == 3

    change = admin_url(people, "change", eve.pk)
    form = {
        "username": "Bob",
        "email": "",
        "is_active": "on",
        "date_joined_0": "2026-01-01",
        "date_joined_1": "00:00:00",
    }
    renamed = web.post(change, form)
    assert renamed.status_code == 200
    assert f"It is taken by {bob.username}" in text(renamed)
    eve.refresh_from_db()
    assert eve.username == "eve"

    kept = web.post(change, {**form, "username": wide("EVE")})  # their own name, as it reads
    assert kept.status_code == 302, text(kept)[:3000]
    eve.refresh_from_db()
    assert eve.username == "EVE"
