"""A start the database cannot take (SQLite's lock wait ran out under a crowd of starts):
a clear page that keeps what was typed, nothing stored, nothing sent; and the same start
sent again goes through."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from mrtrweb.calls.models import Call
from mrtrweb.servers.models import Connection
from tests.calls.pages.client import (
    Pages,
    arg,
    start_tool,
    start_url,
    text,
    tool_calls,
    visible_text,
)
from tests.elicitation.support import controls
from tests.support.sqlite_lock import lock_timeout, sqlite_only, write_lock_held

pytestmark = [sqlite_only, pytest.mark.django_db(transaction=True)]

BUSY = "The database was busy, so nothing was started."


@pytest.fixture(autouse=True)
def _inline_tasks(inline_tasks: None) -> None:
    """The call, once started, is delivered inline."""


def test_a_start_that_outwaits_the_lock_keeps_the_arguments_and_stores_nothing(
    pages: Pages, peer_conn: Connection, fastmcp_peer: Any
) -> None:
    assert pages.get(start_url(peer_conn, tool="add")).status_code == 200  # catalog cached
    since = fastmcp_peer.mark()
    with lock_timeout(200), write_lock_held():
        busy = start_tool(pages, peer_conn, "add", a="2", b="40")
    assert busy.status_code == 503, text(busy)
    assert busy["Retry-After"] == "2"
    assert BUSY in visible_text(busy)
    ((a,), (b,)) = controls(text(busy), arg("a")), controls(text(busy), arg("b"))
    assert (a.attrs["value"], b.attrs["value"]) == ("2", "40")
    assert not Call.objects.exists()
    assert tool_calls(fastmcp_peer, since) == []

    again = start_tool(pages, peer_conn, "add", a="2", b="40")
    assert again.status_code == 303, text(again)
    call = Call.objects.get()
    assert call.status == Call.Status.COMPLETED
    assert len(tool_calls(fastmcp_peer, since)) == 1


def test_start_again_on_a_busy_database_says_so_on_the_old_call(
    pages: Pages, peer_conn: Connection
) -> None:
    start_tool(pages, peer_conn, "add", a="1", b="1")
    old = Call.objects.get()
    Call.objects.filter(pk=old.pk).update(status=Call.Status.FAILED)
    with lock_timeout(200), write_lock_held():
        busy = pages.post(reverse("calls:restart", args=[old.pk]))
    assert busy.status_code == 303
    assert busy["Location"] == reverse("calls:call", args=[old.pk])
    assert Call.objects.count() == 1
    assert "nothing was started" in visible_text(pages.get(busy["Location"]))
