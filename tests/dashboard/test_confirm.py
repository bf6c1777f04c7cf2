"""Actions that cannot be undone ask first, on a page of their own (no JavaScript needed) or,
with htmx, in place of the list; nothing happens until the confirmation is posted."""

from __future__ import annotations

import re
from html import unescape
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.test import Client
from django.urls import reverse

from mrtrweb.calls.models import Round
from mrtrweb.servers.models import Connection
from tests.dashboard.support import client_for, make_admin, make_user, text
from tests.dashboard.test_actions import park, refreshed, tool_calls

pytestmark = pytest.mark.django_db(transaction=True)

ROUNDS = reverse("dashboard:rounds")
BULK = reverse("dashboard:bulk")
HTMX = {"HTTP_HX_REQUEST": "true", "HTTP_HX_CURRENT_URL": "http://testserver" + ROUNDS}


@pytest.fixture(autouse=True)
def _inline_tasks(inline_tasks: None) -> None:
    """Every test here delivers answers inline."""


@pytest.fixture
def web() -> Client:
    return client_for(make_admin("root"))


@pytest.fixture
def ann() -> Any:
    return make_user("ann", "End users")


@pytest.fixture
def conn(fastmcp_peer: Any) -> Connection:
    return Connection.objects.create(name="peer", title="Test peer", url=fastmcp_peer.url)


def hidden_fields(page: str) -> list[tuple[str, str]]:
    return [
        (name, unescape(value))
        for name, value in re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', page)
        if name != "csrfmiddlewaretoken"
    ]


def test_cancel_asks_first_and_acts_only_once_confirmed(
    web: Client, conn: Connection, ann: Any, fastmcp_peer: Any
) -> None:
    round = park(conn, ann)
    since = fastmcp_peer.mark()
    next_url = f"{ROUNDS}?status=pending"

    asked = web.post(BULK, {"one": f"cancel:{round.pk}", "next": next_url})

    assert asked.status_code == 200
    page = text(asked)
    assert [t.name for t in asked.templates][:2] == ["dashboard/confirm.html", "base.html"]
    assert "Cancel 1 round?" in page
    assert f"Round #{round.pk}" in page and "approve_deploy" in page and "for ann" in page
    assert "cannot be undone" in page
    assert 'method="post"' in page and "csrfmiddlewaretoken" in page
    assert hidden_fields(page) == [
        ("confirmed", "1"),
        ("next", next_url),
        ("one", f"cancel:{round.pk}"),
    ]
    assert f'href="{next_url}"' in page.replace("&amp;", "&")  # "No, keep it"
    # Nothing happened yet.
    assert refreshed(round).status == Round.Status.PENDING
    assert tool_calls(fastmcp_peer, since) == []

    done = web.post(BULK, dict(hidden_fields(page)))

    assert done.status_code == 303 and done["Location"] == next_url
    assert refreshed(round).status == Round.Status.DELIVERED
    assert len(tool_calls(fastmcp_peer, since)) == 1


def test_a_bulk_reassign_asks_first_naming_who_gets_them(
    web: Client, conn: Connection, ann: Any
) -> None:
    first, second = park(conn, ann, "a"), park(conn, ann, "b")
    group = Group.objects.create(name="Approvers <ops>")

    asked = web.post(
        BULK,
        {
            "action": "reassign",
            "rounds": [first.pk, second.pk, 999_999],
            "assign_group": group.name,
            "next": ROUNDS,
        },
    )

    page = text(asked)
    assert "Reassign 2 rounds?" in page
    assert "the group <strong>Approvers &lt;ops&gt;</strong>" in page
    assert "1 of the rounds ticked no longer exists" in page
    assert refreshed(first).assigned_group is None

    web.post(BULK, dict(hidden_fields(page)) | {"rounds": [first.pk, second.pk]})

    assert refreshed(first).assigned_group == group
    assert refreshed(second).assigned_group == group


def test_with_htmx_the_question_swaps_in_place_of_the_list(
    web: Client, conn: Connection, ann: Any
) -> None:
    round = park(conn, ann)

    asked = web.post(BULK, {"action": "expire", "rounds": [round.pk], "next": ROUNDS}, **HTMX)

    assert asked.templates[0].name == "dashboard/_confirm.html"
    page = text(asked)
    assert 'id="round-results"' in page and f'hx-post="{BULK}"' in page
    assert "<html" not in page
    assert refreshed(round).status == Round.Status.PENDING


def test_release_and_resend_need_no_confirmation(web: Client, conn: Connection, ann: Any) -> None:
    round = park(conn, ann)
    Round.objects.filter(pk=round.pk).update(claimed_by=ann)

    response = web.post(BULK, {"one": f"release:{round.pk}"})

    assert response.status_code == 303
    assert refreshed(round).claimed_by is None


def test_the_confirmation_needs_a_post() -> None:
    root = client_for(make_admin("root"))
    assert root.get(BULK).status_code == 405
