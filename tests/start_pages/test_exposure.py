"""The start pages honour exposure: end users start only the tools an operator exposed."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from mrtrweb.calls.models import Call
from mrtrweb.elicitation import field_name_for
from mrtrweb.people.roles import END_USERS, OPERATORS
from mrtrweb.servers.catalog import refresh_catalog
from mrtrweb.servers.models import Connection, ToolExposure
from tests.servers.conftest import person, signed_in

pytestmark = pytest.mark.django_db(transaction=True)


def arg(name: str) -> str:
    return f"arg-{field_name_for(name)}"


@pytest.fixture(autouse=True)
def _inline_tasks(inline_tasks: None) -> None:
    """Every test here delivers answers inline."""


def test_end_users_see_and_start_only_exposed_tools(fastmcp_peer: Any) -> None:
    conn = Connection.objects.create(name="peer", url=fastmcp_peer.url)
    hidden = Connection.objects.create(name="hidden", url=fastmcp_peer.url)
    for tested in (conn, hidden):  # as an operator does first
        assert refresh_catalog(tested).ok
    eve = signed_in(person("eve", END_USERS))
    start = reverse("starting:start", kwargs={"connection": "peer"})

    # Nothing exposed: the connection is not offered, and its page is 404.
    assert start not in eve.get(reverse("starting:pick")).content.decode()
    assert eve.get(start).status_code == 404

    ToolExposure.objects.create(connection=conn, tool_name="echo", exposed=True)
    pick = eve.get(reverse("starting:pick")).content.decode()
    assert start in pick and reverse("starting:start", kwargs={"connection": "hidden"}) not in pick
    page = eve.get(start).content.decode()
    assert "?tool=echo" in page and "?tool=add" not in page
    assert "?prompt=" not in page and "?resource=" not in page

    # A tool not exposed cannot be started, even by a hand-made POST.
    eve.post(f"{start}?tool=add", {arg("a"): "1", arg("b"): "2", "start": "1"})
    eve.post(f"{start}?prompt=plain_prompt", {"start": "1"})
    assert not Call.objects.exists()
    response = eve.post(f"{start}?tool=echo", {arg("text"): "hi", "start": "1"})
    assert response.status_code == 303
    assert Call.objects.get().target == "echo"


def test_operators_see_the_whole_catalog(fastmcp_peer: Any) -> None:
    Connection.objects.create(name="peer", url=fastmcp_peer.url)
    olga = signed_in(person("olga", OPERATORS))
    page = olga.get(reverse("starting:start", kwargs={"connection": "peer"})).content.decode()
    assert "?tool=add" in page and "?prompt=plain_prompt" in page and "?resource=" in page
