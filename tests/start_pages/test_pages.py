"""The start pages, driven with the Django test client against the real fastmcp peer."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from mrtrweb.calls.models import Call
from mrtrweb.elicitation import field_name_for
from mrtrweb.servers.models import Connection
from tests.calls.pages.client import (
    Pages,
    arg,
    buttons,
    only_call,
    start_tool,
    start_url,
    text,
    tool_calls,
    visible_text,
)
from tests.elicitation.support import controls

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _inline_tasks(inline_tasks: None) -> None:
    """Every test here delivers the call inline."""


def test_start_pages_list_connections_and_the_catalog(pages: Pages, peer_conn: Connection):
    Connection.objects.create(name="off", url="http://127.0.0.1:9/mcp", enabled=False)
    listing = pages.get(reverse("starting:pick"))
    assert listing.status_code == 200
    assert start_url(peer_conn) in text(listing)
    assert "/calls/start/off/" not in text(listing)
    assert pages.get(start_url(Connection.objects.get(name="off"))).status_code == 404

    page = pages.get(start_url(peer_conn))
    body = visible_text(page)
    assert page.status_code == 200
    assert "mrtrweb-fastmcp-peer" in body
    for name in ("approve_deploy", "purchase", "review_prompt", "peer://vault/secret"):
        assert name in body
    assert "peer://items/{item_id}" in body
    assert "bad_header_number" in body  # listed among the tools left out, with the reason
    assert "Refresh" in buttons(page)


def test_the_arguments_form_follows_the_tool_schema(pages: Pages, peer_conn: Connection):
    page = pages.get(start_url(peer_conn, tool="route_request"))
    html = text(page)
    (region,) = controls(html, arg("region"))
    assert region.attrs["type"] == "text" and "required" in region.attrs
    (priority,) = controls(html, arg("priority"))
    assert (priority.attrs["type"], priority.attrs["value"]) == ("number", "5")
    (dry_run,) = controls(html, arg("dry_run"))
    assert dry_run.attrs["type"] == "checkbox" and "checked" not in dry_run.attrs
    assert "Edit the arguments as JSON instead" in visible_text(page)

    nested = pages.get(start_url(peer_conn, tool="nested_header"))
    assert controls(text(nested), "arguments")[0].tag == "textarea"
    assert "edited as JSON" in visible_text(nested)


def test_a_tool_call_started_from_the_page_runs_with_typed_arguments(
    pages: Pages, peer_conn: Connection, fastmcp_peer: Any
):
    since = fastmcp_peer.mark()
    response = start_tool(pages, peer_conn, "add", a="2", b="40")
    call = only_call()
    assert response.status_code == 303
    assert response["Location"] == call.get_absolute_url()
    assert '"arguments":{"a": 2, "b": 40}' in tool_calls(fastmcp_peer, since)[0]["body"]
    page = pages.get(call.get_absolute_url())
    assert "42" in visible_text(page)
    assert call.started_by.get_username() == "ada"


def test_the_json_editor_sends_the_arguments_exactly_and_refuses_non_objects(
    pages: Pages, peer_conn: Connection, fastmcp_peer: Any
):
    url = start_url(peer_conn, tool="echo", json="1")
    refused = pages.post(url, {"arguments": "[1, 2]", "start": "1"})
    assert refused.status_code == 200
    assert "must be a JSON object" in visible_text(refused)
    bad = pages.post(url, {"arguments": "{nope", "start": "1"})
    assert "not valid JSON" in visible_text(bad)
    assert not Call.objects.exists()

    since = fastmcp_peer.mark()
    done = pages.post(url, {"arguments": '{"text":  "hi there"}', "start": "1"})
    assert done.status_code == 303
    assert '"arguments":{"text":  "hi there"}' in tool_calls(fastmcp_peer, since)[0]["body"]
    assert "hi there" in visible_text(pages.get(done["Location"]))


@pytest.mark.parametrize(
    ("typed", "says"),
    [
        ('{"n": [1, 1e999]}', "The number at /n/1 is too large"),
        ('{"n": {"m": -1E400}}', "The number at /n/m is too large"),
        ('{"n": Infinity}', "Infinity is not a JSON number"),
        ('{"n": -Infinity}', "-Infinity is not a JSON number"),
        ('{"n": NaN}', "NaN is not a JSON number"),
    ],
)
def test_the_json_editor_refuses_numbers_that_are_not_finite_and_keeps_the_text(
    pages: Pages, peer_conn: Connection, typed: str, says: str
):
    url = start_url(peer_conn, tool="echo", json="1")
    refused = pages.post(url, {"arguments": typed, "start": "1"})
    assert refused.status_code == 200
    assert says in visible_text(refused)
    assert typed in visible_text(refused)  # nothing typed is lost
    assert not Call.objects.exists()


def test_missing_required_arguments_are_reported_and_nothing_is_called(
    pages: Pages, peer_conn: Connection
):
    response = start_tool(pages, peer_conn, "approve_deploy", service="", environment="prod")
    assert response.status_code == 200
    assert "This field is required." in visible_text(response)
    (environment,) = controls(text(response), arg("environment"))
    assert environment.attrs["value"] == "prod"
    assert not Call.objects.exists()


def test_prompts_and_resources_are_started_from_the_page(pages: Pages, peer_conn: Connection):
    response = pages.post(
        start_url(peer_conn, prompt="greeting_prompt"), {arg("name"): "Bo", "start": "1"}
    )
    page = pages.get(response["Location"])
    assert "Say hello to Bo." in visible_text(page)
    assert "user" in visible_text(page)

    response = pages.post(
        start_url(peer_conn, template="peer://docs/{section}/{page}"),
        {f"var-{field_name_for('section')}": "a b", f"var-{field_name_for('page')}": "7"},
    )
    call = Call.objects.get(method=Call.Method.RESOURCE)
    assert call.target == "peer://docs/a%20b/7"
    assert response["Location"] == call.get_absolute_url()

    response = pages.post(start_url(peer_conn, resource="peer://static/2"), {"start": "1"})
    assert "static resource 2" in visible_text(pages.get(response["Location"]))


def test_a_legacy_server_says_its_era_and_lists_its_catalog(pages: Pages, fault_peer: Any):
    legacy = fault_peer("legacy")
    conn = Connection.objects.create(name="old", url=legacy.url)
    page = pages.get(start_url(conn))
    body = visible_text(page)
    assert page.status_code == 200
    assert "could not be probed" not in body
    assert "speaks MCP 2025-11-25, the older handshake era" in body
    conn.refresh_from_db()
    assert conn.catalog["tools"]
    assert conn.catalog["tools"][0]["name"] in body
    refreshed = pages.post(start_url(conn), {"refresh": "1"})
    assert "could not be probed" not in visible_text(refreshed)


def test_the_home_page_links_to_starting_a_call(web: Client):
    body = text(web.get(reverse("core:home")))
    assert reverse("starting:pick") in body
