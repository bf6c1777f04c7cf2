"""The operators' console, driven with the Django test client against real MCP peers."""

from __future__ import annotations

import logging
import re
from datetime import timedelta
from html import unescape
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.test import Client
from django.urls import reverse

from mrtrweb.people.roles import END_USERS
from mrtrweb.servers.models import Connection, ToolExposure
from tests.peers.fixtures import Peer, free_port
from tests.servers.conftest import person, signed_in
from tests.servers.html_peer import INSTRUCTIONS, TOOL_DESCRIPTION

pytestmark = pytest.mark.django_db

TOKEN = "tok-Console-7f3a-classified"
HEADER_VALUE = "hdr-Console-91be-classified"
HTMX = {"HTTP_HX_REQUEST": "true"}


def url(name: str, connection: Connection | str | None = None) -> str:
    if connection is None:
        return reverse(f"servers:{name}")
    name_ = connection if isinstance(connection, str) else connection.name
    return reverse(f"servers:{name}", kwargs={"name": name_})


def form_data(**overrides: Any) -> dict[str, Any]:
    data = {
        "name": "peer",
        "title": "The peer",
        "url": "http://127.0.0.1:1/mcp",
        "bearer_token": "",
        "headers": "",
        "connect_timeout": "10",
        "read_timeout": "60",
        "max_response_bytes": "10000000",
        "state_lifetime": "10",
        "max_rounds": "10",
        "answer_deadline": "60",
        "answer_deadline_max": "600",
        "routing": "caller",
        "route_user": "",
        "route_group": "",
    }
    data.update(overrides)
    return data


def text_of(response: Any) -> str:
    """The page as a person reads it: tags removed, entities decoded, spaces collapsed."""
    body = response.content.decode()
    body = re.sub(r"<(script|style)\b.*?</\1>", " ", body, flags=re.S)
    body = re.sub(r"</?(strong|code|span|a|em|b|time)\b[^>]*>", "", body)
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", body)).split())


def make(peer: Peer | str, name: str = "peer", **fields: Any) -> Connection:
    address = peer if isinstance(peer, str) else peer.url
    return Connection.objects.create(name=name, url=address, **fields)


def methods_sent(peer: Peer, since: int) -> list[str]:
    return [(r["json"] or {}).get("method", "") for r in peer.recorded(since)]


# -- who may enter ------------------------------------------------------------------------

PAGES = [
    ("list", False, "get"),
    ("create", False, "get"),
    ("create", False, "post"),
    ("edit", True, "get"),
    ("edit", True, "post"),
    ("test", True, "post"),
    ("catalog", True, "get"),
    ("catalog", True, "post"),
    ("exposure", True, "get"),
    ("exposure", True, "post"),
    ("toggle", True, "post"),
]


@pytest.mark.parametrize(("name", "per_connection", "verb"), PAGES)
def test_only_operators_get_in(name: str, per_connection: bool, verb: str) -> None:
    conn = make("http://127.0.0.1:1/mcp", catalog={"tools": [{"name": "t", "inputSchema": {}}]})
    target = url(name, conn if per_connection else None)
    data = {"tool": "t", "exposed": "on", "enabled": "0"} if verb == "post" else None

    response = getattr(Client(), verb)(target, data)
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login") + "?next=")

    staff_only = person("stan", is_staff=True)
    for outsider in (person("eve", END_USERS), person("adam", "Admins"), staff_only):
        response = getattr(signed_in(outsider), verb)(target, data)
        assert response.status_code == 403, (outsider, name, verb)
    conn.refresh_from_db()
    assert conn.enabled and not ToolExposure.objects.exists()
    assert not Connection.objects.exclude(pk=conn.pk).exists()


@pytest.mark.parametrize("name", ["list", "create"])
def test_operators_and_superusers_see_the_console(name: str, operator: Any) -> None:
    root = person("root", is_superuser=True)
    for user in (operator, root):
        assert signed_in(user).get(url(name)).status_code == 200


def test_the_header_links_the_console_for_operators_only(operator: Any, end_user: Any) -> None:
    home = reverse("core:home")
    assert f'href="{url("list")}"' in signed_in(operator).get(home).content.decode()
    assert f'href="{url("list")}"' not in signed_in(end_user).get(home).content.decode()


def test_an_inactive_operator_is_turned_away(operator: Any) -> None:
    client = signed_in(operator)
    operator.is_active = False
    operator.save()
    response = client.get(url("list"))
    assert response.status_code == 302


def test_unknown_connections_are_404(web: Client) -> None:
    for name in ("edit", "catalog", "exposure"):
        assert web.get(url(name, "nope")).status_code == 404
    assert web.post(url("test", "nope")).status_code == 404
    assert web.post(url("toggle", "nope"), {"enabled": "0"}).status_code == 404


def test_test_and_toggle_are_post_only(web: Client) -> None:
    conn = make("http://127.0.0.1:1/mcp")
    assert web.get(url("test", conn)).status_code == 405
    assert web.get(url("toggle", conn)).status_code == 405


# -- CSRF -----------------------------------------------------------------------------------


def csrf_token_of(page: Any) -> str:
    match = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.content.decode())
    assert match, "the page has no CSRF token"
    return match.group(1)


def test_every_console_form_needs_the_csrf_token(operator: Any, fastmcp_peer: Peer) -> None:
    guarded = signed_in(operator, enforce_csrf_checks=True)
    conn = make(fastmcp_peer)
    ToolExposure.objects.create(connection=conn, tool_name="echo")
    posts = [
        (url("create"), form_data(name="other")),
        (url("edit", conn), form_data(name="peer", url=fastmcp_peer.url)),
        (url("test", conn), {}),
        (url("catalog", conn), {}),
        (url("exposure", conn), {"tool": "echo", "exposed": "on", "routing": ""}),
        (url("toggle", conn), {"enabled": "0"}),
    ]
    since = fastmcp_peer.mark()
    for target, data in posts:
        assert guarded.post(target, data).status_code == 403, target
    assert fastmcp_peer.recorded(since) == []
    conn.refresh_from_db()
    assert conn.enabled and conn.title == "" and not conn.catalog
    assert not ToolExposure.objects.filter(exposed=True).exists()

    # With the token from the page, the same posts go through.
    token = csrf_token_of(guarded.get(url("edit", conn)))
    response = guarded.post(url("toggle", conn), {"enabled": "0", "csrfmiddlewaretoken": token})
    assert response.status_code == 303
    conn.refresh_from_db()
    assert not conn.enabled
    token = csrf_token_of(guarded.get(url("create")))
    response = guarded.post(
        url("create"), {**form_data(name="other"), "csrfmiddlewaretoken": token}
    )
    assert response.status_code == 303
    # htmx sends the token as a header (base.html's hx-headers).
    token = csrf_token_of(guarded.get(url("exposure", conn)))
    response = guarded.post(
        url("exposure", conn),
        {"tool": "echo", "exposed": "on", "routing": ""},
        HTTP_X_CSRFTOKEN=token,
        **HTMX,
    )
    assert response.status_code == 200
    assert ToolExposure.objects.get(connection=conn, tool_name="echo").exposed


# -- creating and editing ---------------------------------------------------------------------


def test_create_stores_every_field_and_encrypts_the_secrets(web: Client) -> None:
    group = Group.objects.get(name=END_USERS)
    response = web.post(
        url("create"),
        form_data(
            name="billing",
            title="Billing",
            url="https://mcp.example.com/mcp",
            bearer_token=TOKEN,
            headers=f"X-Api-Key: {HEADER_VALUE}\n\nX-Team:ops\n",
            connect_timeout="2.5",
            read_timeout="30",
            max_response_bytes="2000000",
            state_lifetime="1.5",
            max_rounds="4",
            routing="group",
            route_group=str(group.pk),
        ),
    )
    assert response.status_code == 303
    assert response["Location"] == url("edit", "billing")
    conn = Connection.objects.get(name="billing")
    assert (conn.title, conn.url) == ("Billing", "https://mcp.example.com/mcp")
    assert conn.bearer_token == TOKEN
    assert conn.headers == {"X-Api-Key": HEADER_VALUE, "X-Team": "ops"}
    assert (conn.connect_timeout, conn.read_timeout) == (2.5, 30.0)
    assert conn.max_response_bytes == 2_000_000
    assert conn.state_lifetime == timedelta(seconds=90)
    assert conn.max_rounds == 4
    assert (conn.routing, conn.route_group, conn.route_user) == ("group", group, None)
    assert conn.enabled

    from django.db import connection as db

    with db.cursor() as cursor:
        cursor.execute("SELECT bearer_token, headers FROM servers_connection WHERE name='billing'")
        raw_token, raw_headers = cursor.fetchone()
    assert TOKEN not in raw_token and HEADER_VALUE not in raw_headers


def test_the_edit_page_says_set_and_names_headers_but_never_shows_values(web: Client) -> None:
    conn = make("http://127.0.0.1:1/mcp", bearer_token=TOKEN, headers={"X-Api-Key": HEADER_VALUE})
    page = web.get(url("edit", conn))
    body = page.content.decode()
    assert TOKEN not in body and HEADER_VALUE not in body
    text = text_of(page)
    assert "A token is set." in text
    assert "Headers are set: X-Api-Key (values hidden)" in text
    assert 'name="clear_token"' in body and 'name="clear_headers"' in body
    # The secret inputs render empty.
    assert re.search(r'<input type="password" name="bearer_token"[^>]*>', body)
    assert 'value="' not in re.search(r'<input type="password"[^>]*>', body).group(0)
    assert re.search(r'<textarea name="headers"[^>]*>\s*</textarea>', body)

    bare = make("http://127.0.0.1:1/mcp", name="bare")
    text = text_of(web.get(url("edit", bare)))
    assert "No token is stored." in text and "No custom headers are stored." in text
    assert 'name="clear_token"' not in web.get(url("edit", bare)).content.decode()


def test_an_empty_secret_field_keeps_the_stored_value(web: Client) -> None:
    conn = make("http://127.0.0.1:1/mcp", bearer_token=TOKEN, headers={"X-Api-Key": HEADER_VALUE})
    response = web.post(url("edit", conn), form_data(name="peer", title="Renamed"))
    assert response.status_code == 303
    conn.refresh_from_db()
    assert conn.title == "Renamed"
    assert (conn.bearer_token, conn.headers) == (TOKEN, {"X-Api-Key": HEADER_VALUE})


def test_secrets_can_be_replaced_and_cleared(web: Client) -> None:
    conn = make("http://127.0.0.1:1/mcp", bearer_token=TOKEN, headers={"X-Api-Key": HEADER_VALUE})
    web.post(url("edit", conn), form_data(bearer_token="new-token", headers="X-Other: 1"))
    conn.refresh_from_db()
    assert (conn.bearer_token, conn.headers) == ("new-token", {"X-Other": "1"})

    web.post(url("edit", conn), form_data(clear_token="on", clear_headers="on"))
    conn.refresh_from_db()
    assert (conn.bearer_token, conn.headers) == ("", None)


def test_replacing_and_clearing_at_once_is_refused(web: Client) -> None:
    conn = make("http://127.0.0.1:1/mcp", bearer_token=TOKEN, headers={"A": "b"})
    response = web.post(
        url("edit", conn),
        form_data(bearer_token="x", clear_token="on", headers="B: c", clear_headers="on"),
    )
    assert response.status_code == 422
    text = text_of(response)
    assert "Either enter a new token or remove it, not both." in text
    assert "Either enter new headers or remove them, not both." in text
    conn.refresh_from_db()
    assert (conn.bearer_token, conn.headers) == (TOKEN, {"A": "b"})


@pytest.mark.parametrize(
    ("headers", "message"),
    [
        ("NoColon", 'Line 1: must look like "Name: value"'),
        ("X-Ok: 1\nBad Name: v", "Line 2: 'Bad Name' is not a valid header name"),
        (
            "Authorization: Bearer x",
            "Authorization is set by mrtrweb itself (use the bearer token field)",
        ),
        ("Mcp-Param-Region: eu", "Mcp-Param-Region is set by mrtrweb itself"),
        ("MCP-Protocol-Version: 1", "MCP-Protocol-Version is set by mrtrweb itself"),
        ("A: 1\na: 2", "Line 2: a is given twice"),
        (
            "X-Key: caf\u00e9-" + HEADER_VALUE,
            "X-Key: the value must be printable ASCII on one line",
        ),
    ],
)
def test_bad_headers_are_refused_by_the_shared_rules_without_echoing(
    web: Client, headers: str, message: str
) -> None:
    response = web.post(url("create"), form_data(headers=headers, bearer_token=TOKEN))
    assert response.status_code == 422
    text = text_of(response)
    assert message in text
    assert HEADER_VALUE not in response.content.decode()
    assert TOKEN not in response.content.decode()
    assert "enter them once more" in text
    assert not Connection.objects.exists()


def test_an_error_page_never_shows_the_typed_secrets(web: Client) -> None:
    response = web.post(
        url("create"),
        form_data(url="not a url", bearer_token=TOKEN, headers=f"X-Api-Key: {HEADER_VALUE}"),
    )
    assert response.status_code == 422
    body = response.content.decode()
    assert TOKEN not in body and HEADER_VALUE not in body
    assert "Enter a valid URL." in text_of(response)


@pytest.mark.parametrize(
    ("overrides", "field_error"),
    [
        ({"name": "bad name"}, "Enter a valid “slug”"),
        ({"url": "ftp://example.com/mcp"}, "Enter a valid URL."),
        ({"url": "https://user:pw@example.com/mcp"}, "not in the URL"),
        ({"max_rounds": "0"}, "greater than or equal to 1"),
        ({"connect_timeout": "0"}, "greater than or equal to 0.1"),
        ({"state_lifetime": "0"}, "greater than or equal to 0.05"),
        ({"max_response_bytes": "10"}, "greater than or equal to 1024"),
        ({"bearer_token": "a\u00e9b"}, "The token must be printable ASCII on one line."),
        ({"routing": "user"}, "Name the user the rounds go to."),
        ({"routing": "user", "route_user": "ghost"}, "No active user has this username."),
        ({"routing": "group"}, "Name the group the rounds go to."),
    ],
)
def test_invalid_input_is_explained(
    web: Client, overrides: dict[str, str], field_error: str
) -> None:
    response = web.post(url("create"), form_data(**overrides))
    assert response.status_code == 422
    assert field_error in text_of(response)
    assert not Connection.objects.exists()


def test_routing_to_a_named_user_and_back_to_the_caller(web: Client, end_user: Any) -> None:
    conn = make("http://127.0.0.1:1/mcp")
    group = Group.objects.get(name=END_USERS)
    response = web.post(
        url("edit", conn), form_data(routing="user", route_user="eve", route_group=str(group.pk))
    )
    assert response.status_code == 303
    conn.refresh_from_db()
    # Only the target the routing uses is kept.
    assert (conn.routing, conn.route_user, conn.route_group) == ("user", end_user, None)
    page = web.get(url("edit", conn)).content.decode()
    assert re.search(r'name="route_user" value="eve"', page)

    web.post(url("edit", conn), form_data(routing="caller", route_user="eve"))
    conn.refresh_from_db()
    assert (conn.routing, conn.route_user) == ("caller", None)


def test_the_name_cannot_change_after_creation(web: Client) -> None:
    conn = make("http://127.0.0.1:1/mcp")
    response = web.post(url("edit", conn), form_data(name="renamed", title="T"))
    assert response.status_code == 303
    conn.refresh_from_db()
    assert (conn.name, conn.title) == ("peer", "T")


def test_a_duplicate_name_is_refused(web: Client) -> None:
    make("http://127.0.0.1:1/mcp")
    response = web.post(url("create"), form_data(name="peer"))
    assert response.status_code == 422
    assert "Connection with this Name already exists." in text_of(response)


def test_state_lifetime_is_shown_in_minutes(web: Client) -> None:
    conn = make("http://127.0.0.1:1/mcp", state_lifetime=timedelta(seconds=90))
    assert 'name="state_lifetime" value="1.5"' in web.get(url("edit", conn)).content.decode()
    conn.state_lifetime = timedelta(minutes=10)
    conn.save()
    assert 'name="state_lifetime" value="10"' in web.get(url("edit", conn)).content.decode()


# -- the list, disable and enable ---------------------------------------------------------------


def test_the_list_shows_each_connection(web: Client, fastmcp_peer: Peer) -> None:
    conn = make(fastmcp_peer, title="Peer one")
    make("http://127.0.0.1:1/mcp", name="quiet", enabled=False)
    assert "never" in text_of(web.get(url("list")))
    web.post(url("test", conn))
    ToolExposure.objects.create(connection=conn, tool_name="echo", exposed=True)
    conn.refresh_from_db()
    text = text_of(web.get(url("list")))
    tools = len(conn.catalog["tools"])
    fetched = conn.catalog_fetched_at.strftime("%-d %b %Y")
    row = (
        rf"peer Peer one {re.escape(fastmcp_peer.url)} yes OAuth, per person 2026-07-28 "
        rf"{tools} \(1 exposed\)"
    )
    assert re.search(rf"{row} {fetched}", text), text
    quiet = r"quiet http://127\.0\.0\.1:1/mcp no OAuth, per person unknown - never Enable"
    assert re.search(quiet, text), text


def test_disable_and_enable(web: Client, end_user: Any) -> None:
    conn = make("http://127.0.0.1:1/mcp")
    response = web.post(url("toggle", conn), {"enabled": "0"})
    assert response.status_code == 303 and response["Location"] == url("list")
    conn.refresh_from_db()
    assert not conn.enabled
    assert "Connection “peer” disabled." in text_of(web.get(url("list")))
    # End users no longer find it to start calls on.
    start = signed_in(end_user).get(reverse("starting:pick"))
    assert conn.url not in start.content.decode()

    response = web.post(url("toggle", conn), {"enabled": "1", "next": url("edit", conn)})
    assert response["Location"] == url("edit", conn)
    conn.refresh_from_db()
    assert conn.enabled
    # Only a path on this site is followed.
    response = web.post(url("toggle", conn), {"enabled": "1", "next": "//evil.example/"})
    assert response["Location"] == url("list")


# -- Test connection -------------------------------------------------------------------------------


def test_testing_a_working_server_shows_what_it_is(web: Client, fastmcp_peer: Peer) -> None:
    conn = make(fastmcp_peer)
    response = web.post(url("test", conn))
    assert response.status_code == 200
    conn.refresh_from_db()
    catalog = conn.catalog
    text = text_of(response)
    assert "The connection works" in text
    assert f"Server mrtrweb-fastmcp-peer {catalog['server']['info']['version']}" in text
    assert "Protocol 2026-07-28 (era: modern)" in text
    assert "Supported versions 2026-07-28" in text
    assert re.search(r"Capabilities .*\bprompts\b.*\bresources\b.*\btools\b", text)
    assert f"Tools {len(catalog['tools'])} " in text
    assert f"Prompts {len(catalog['prompts'])} " in text
    assert f"Resources {len(catalog['resources'])} + {len(catalog['resource_templates'])}" in text
    assert "Test peer for mrtrweb: tools, prompts and resources that exercise MRTR." in text
    # The tools with invalid x-mcp-header annotations are dropped by the client, with reasons.
    dropped = {name for name, _ in catalog["dropped_tools"]}
    assert dropped >= {"bad_header_number", "bad_header_array", "bad_header_token"}
    assert f"{len(catalog['dropped_tools'])} tools left out as invalid" in text
    for name, reason in catalog["dropped_tools"]:
        assert f"{name}: {reason}" in text
    assert conn.era == "modern" and conn.catalog_fetched_at is not None
    # Without htmx, a whole page.
    assert "<html" in response.content.decode()


def test_with_htmx_the_result_is_a_fragment(web: Client, fastmcp_peer: Peer) -> None:
    conn = make(fastmcp_peer)
    edit = web.get(url("edit", conn)).content.decode()
    assert f'hx-post="{url("test", conn)}"' in edit and 'id="test-result"' in edit
    response = web.post(url("test", conn), **HTMX)
    body = response.content.decode()
    assert response.status_code == 200
    assert "<html" not in body and "<nav" not in body
    assert body.lstrip().startswith('<section class="result test-result"')
    assert "The connection works" in text_of(response)


def test_instructions_and_descriptions_are_escaped(web: Client, html_peer: Peer) -> None:
    conn = make(html_peer)
    response = web.post(url("test", conn))
    body = response.content.decode()
    assert "<script>alert" not in body and "<i>html-peer</i>" not in body
    assert "&lt;script&gt;alert(&#x27;instructions&#x27;)&lt;/script&gt;" in body
    assert INSTRUCTIONS in text_of(response)
    assert "<i>html-peer</i>" in text_of(response)

    for page in (web.get(url("catalog", conn)), web.get(url("exposure", conn))):
        body = page.content.decode()
        assert "<img src=x" not in body and "<u>Hello</u>" not in body
        assert "<marquee>" not in body
        assert TOOL_DESCRIPTION in text_of(page)


def test_a_legacy_server_is_probed_with_the_handshake(web: Client, fault_peer: Any) -> None:
    conn = make(fault_peer("legacy"))
    response = web.post(url("test", conn))
    text = text_of(response)
    # Not an error: the era is said, and the catalog listed in a session.
    assert "The connection works" in text
    assert "2025-11-25 (handshake era" in text
    assert "LegacyServer" not in text
    conn.refresh_from_db()
    assert conn.era == "legacy"
    assert conn.catalog["tools"]
    assert "2025-11-25 (handshake era)" in text_of(web.get(url("list")))


def test_authentication_without_and_with_the_token(web: Client, fault_peer: Any) -> None:
    peer = fault_peer("auth")
    conn = make(peer)
    # OAuth per person (the default) reads a 401 as "connect your account", and says what
    # else it may mean.
    text = text_of(web.post(url("test", conn)))
    assert "An account is needed" in text
    assert "If the server expects a static token instead" in text

    Connection.objects.filter(pk=conn.pk).update(auth="header")
    text = text_of(web.post(url("test", conn)))
    assert "Authentication failed" in text
    assert "The server rejected the credentials (401)" in text
    assert "Set or replace the bearer token" in text

    web.post(url("edit", conn), form_data(url=peer.url, bearer_token="wrong"))
    assert "(401)" in text_of(web.post(url("test", conn)))

    web.post(url("edit", conn), form_data(url=peer.url, bearer_token="limited"))
    text = text_of(web.post(url("test", conn)))
    assert "refused access (403)" in text and "lack permission" in text

    web.post(url("edit", conn), form_data(url=peer.url, bearer_token="secret"))
    text = text_of(web.post(url("test", conn)))
    assert "The connection works" in text
    assert "Server mrtrweb-fault-peer" in text and "(era: modern)" in text


def test_a_busy_server_is_told_apart_from_an_unreachable_one(web: Client, fault_peer: Any) -> None:
    conn = make(fault_peer("http-503"))
    text = text_of(web.post(url("test", conn)))
    assert "ServerBusy:" in text and "HTTP 503" in text
    assert "Busy" in text and "declined the request for now" in text
    assert "not reachable" not in text


def test_an_unused_port_is_not_reachable(web: Client) -> None:
    conn = make(f"http://127.0.0.1:{free_port()}/mcp", connect_timeout=2)
    text = text_of(web.post(url("test", conn)))
    assert "Not reachable" in text
    assert "nothing accepted the connection at this URL" in text
    assert "NotDelivered:" in text


# -- the catalog --------------------------------------------------------------------------------


def test_the_catalog_page_lists_tools_prompts_and_resources(
    web: Client, fastmcp_peer: Peer
) -> None:
    conn = make(fastmcp_peer)
    ToolExposure.objects.create(connection=conn, tool_name="echo", exposed=True)
    response = web.get(url("catalog", conn))
    assert response.status_code == 200
    conn.refresh_from_db()
    text = text_of(response)
    assert f"Tools ({len(conn.catalog['tools'])})" in text
    assert "echo Echo end users may start it Return the text unchanged." in text
    assert "approve_deploy" in text and "review_prompt (topic)" in text
    assert "peer://static/1" in text and "peer://items/{item_id}" in text
    assert "Listed " in text and "re-listed after" in text
    assert f'action="{url("catalog", conn)}"' in response.content.decode()


def test_the_catalog_is_relisted_when_the_servers_ttl_has_passed(
    web: Client, fastmcp_peer: Peer
) -> None:
    conn = make(fastmcp_peer)  # ttlMs 0: every visit finds the catalog expired
    for _ in range(2):
        since = fastmcp_peer.mark()
        web.get(url("catalog", conn))
        assert "tools/list" in methods_sent(fastmcp_peer, since)


def test_a_fresh_catalog_is_served_from_the_cache_until_refresh(
    web: Client, peer_factory: Any
) -> None:
    peer = peer_factory("fastmcp_server", "--cache-ttl", "60", "--cache-scope", "public")
    conn = make(peer)
    since = peer.mark()
    web.get(url("catalog", conn))
    assert "tools/list" in methods_sent(peer, since)
    conn.refresh_from_db()
    assert conn.catalog_expires_at - conn.catalog_fetched_at == timedelta(seconds=60)

    since = peer.mark()
    assert "just now" not in text_of(web.get(url("catalog", conn)))
    web.get(url("exposure", conn))
    assert methods_sent(peer, since) == []

    response = web.post(url("catalog", conn))
    assert "tools/list" in methods_sent(peer, since)
    assert "(just now)" in text_of(response)


def test_a_failing_refresh_keeps_showing_the_last_catalog(web: Client, fastmcp_peer: Peer) -> None:
    conn = make(fastmcp_peer)
    web.post(url("test", conn))
    Connection.objects.filter(pk=conn.pk).update(url=f"http://127.0.0.1:{free_port()}/mcp")
    text = text_of(web.post(url("catalog", conn)))
    assert "Not reachable" in text
    assert "Below is what the server offered when it was last reached." in text
    assert "approve_deploy" in text


# -- exposure ------------------------------------------------------------------------------------


def exposure_post(tool: str, **fields: str) -> dict[str, str]:
    return {"tool": tool, "routing": "", "route_user": "", "route_group": "", **fields}


def test_the_exposure_page_has_a_row_per_tool(web: Client, fastmcp_peer: Peer) -> None:
    conn = make(fastmcp_peer)
    response = web.get(url("exposure", conn))
    body = response.content.decode()
    conn.refresh_from_db()
    assert body.count('<li class="exposure') == len(conn.catalog["tools"])
    assert body.count('name="exposed"') == len(conn.catalog["tools"])
    # Each row's checkbox saves itself with htmx; the Save button works without JavaScript.
    assert 'hx-trigger="change" hx-include="closest form"' in body
    assert "End users may start it" in text_of(response)
    # Ids are unique although every row has the same fields.
    ids = re.findall(r'\bid="([^"]+)"', body)
    assert len(ids) == len(set(ids))


def test_exposing_a_tool_without_javascript(web: Client, fastmcp_peer: Peer) -> None:
    conn = make(fastmcp_peer)
    web.get(url("exposure", conn))
    response = web.post(url("exposure", conn), exposure_post("echo", exposed="on"))
    assert response.status_code == 303
    assert response["Location"] == url("exposure", conn)
    exposure = ToolExposure.objects.get(connection=conn, tool_name="echo")
    assert exposure.exposed and exposure.routing == ""
    assert "Saved: echo may now be started by end users." in text_of(web.get(response["Location"]))

    web.post(url("exposure", conn), exposure_post("echo"))
    exposure.refresh_from_db()
    assert not exposure.exposed
    assert ToolExposure.objects.count() == 1


def test_exposure_with_htmx_swaps_just_the_row(web: Client, fastmcp_peer: Peer) -> None:
    conn = make(fastmcp_peer)
    web.get(url("exposure", conn))
    response = web.post(url("exposure", conn), exposure_post("add", exposed="on"), **HTMX)
    assert response.status_code == 200
    body = response.content.decode()
    assert body.lstrip().startswith('<li class="exposure exposed" id="tool-')
    assert body.count("<li") == 1 and "<html" not in body
    assert "Saved." in text_of(response)
    assert re.search(r'name="exposed"[^>]*checked', body)
    assert ToolExposure.objects.get(connection=conn, tool_name="add").exposed


def test_a_routing_override_per_tool(web: Client, fastmcp_peer: Peer, end_user: Any) -> None:
    conn = make(fastmcp_peer)
    web.get(url("exposure", conn))
    group = Group.objects.get(name=END_USERS)

    web.post(
        url("exposure", conn), exposure_post("purchase", routing="group", route_group=str(group.pk))
    )
    exposure = ToolExposure.objects.get(connection=conn, tool_name="purchase")
    assert (exposure.routing, exposure.route_group, exposure.exposed) == ("group", group, False)

    web.post(url("exposure", conn), exposure_post("purchase", routing="user", route_user="eve"))
    exposure.refresh_from_db()
    assert (exposure.routing, exposure.route_user, exposure.route_group) == ("user", end_user, None)
    page = web.get(url("exposure", conn)).content.decode()
    assert 'value="eve"' in page

    web.post(url("exposure", conn), exposure_post("purchase", route_user="eve"))
    exposure.refresh_from_db()
    assert (exposure.routing, exposure.route_user) == ("", None)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"routing": "user"}, "Name the user the rounds go to."),
        ({"routing": "user", "route_user": "ghost"}, "No active user has this username."),
        ({"routing": "group"}, "Name the group the rounds go to."),
        ({"routing": "everyone"}, "Select a valid choice."),
    ],
)
def test_an_incomplete_override_is_explained(
    web: Client, fastmcp_peer: Peer, fields: dict[str, str], message: str
) -> None:
    conn = make(fastmcp_peer)
    web.get(url("exposure", conn))
    response = web.post(url("exposure", conn), exposure_post("echo", exposed="on", **fields))
    assert response.status_code == 422
    assert message in text_of(response)
    partial = web.post(url("exposure", conn), exposure_post("echo", exposed="on", **fields), **HTMX)
    assert partial.status_code == 200  # htmx swaps only 2xx answers
    assert message in text_of(partial) and "Saved." not in text_of(partial)
    assert not ToolExposure.objects.exists()


def test_a_tool_the_server_does_not_offer_is_404(web: Client, fastmcp_peer: Peer) -> None:
    conn = make(fastmcp_peer)
    web.get(url("exposure", conn))
    assert web.post(url("exposure", conn), exposure_post("nope", exposed="on")).status_code == 404
    assert not ToolExposure.objects.exists()


def test_settings_for_tools_gone_from_the_server_are_listed_apart(
    web: Client, fastmcp_peer: Peer
) -> None:
    conn = make(fastmcp_peer)
    ToolExposure.objects.create(connection=conn, tool_name="retired_tool", exposed=True)
    text = text_of(web.get(url("exposure", conn)))
    assert "Settings for tools the server no longer lists" in text
    assert "retired_tool (was exposed)" in text


def test_exposure_before_any_listing_says_to_test_first(web: Client) -> None:
    conn = make(f"http://127.0.0.1:{free_port()}/mcp", connect_timeout=2)
    text = text_of(web.get(url("exposure", conn)))
    assert "Not reachable" in text
    assert "The catalog has not been listed yet: test the connection first." in text


# -- secrets never leave ------------------------------------------------------------------------


def test_a_token_and_header_values_appear_in_no_page_and_no_log_line(
    web: Client, fault_peer: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    peer = fault_peer("auth", "--token", TOKEN)
    pages: list[Any] = []
    pages.append(
        web.post(
            url("create"),
            form_data(
                name="gated",
                url=peer.url,
                bearer_token=TOKEN,
                headers=f"X-Api-Key: {HEADER_VALUE}",
            ),
            follow=True,
        )
    )
    conn = Connection.objects.get(name="gated")
    assert conn.bearer_token == TOKEN and conn.headers == {"X-Api-Key": HEADER_VALUE}
    since = peer.mark()
    pages.append(web.post(url("test", conn)))
    pages.append(web.post(url("test", conn), **HTMX))
    sent = peer.recorded(since)
    assert sent and all(
        ["authorization", f"Bearer {TOKEN}"] in r["headers"]
        and ["x-api-key", HEADER_VALUE] in r["headers"]
        for r in sent
    )
    assert "The connection works" in text_of(pages[-1])
    pages += [
        web.get(url("list")),
        web.get(url("create")),
        web.get(url("edit", conn)),
        web.get(url("catalog", conn)),
        web.post(url("catalog", conn)),
        web.get(url("exposure", conn)),
        web.post(url("exposure", conn), exposure_post("echo", exposed="on"), follow=True),
        web.post(url("exposure", conn), exposure_post("add", exposed="on"), **HTMX),
        web.post(url("edit", conn), form_data(name="gated", url=peer.url, title="T"), follow=True),
        web.post(url("edit", conn), form_data(url="bad", bearer_token=TOKEN, headers="X: 1")),
        web.post(url("toggle", conn), {"enabled": "0"}, follow=True),
        web.post(url("toggle", conn), {"enabled": "1"}, follow=True),
        # A wrong token: the failure message must not carry the stored one either.
        web.post(url("edit", conn), form_data(url=peer.url, bearer_token=TOKEN + "x"), follow=True),
        web.post(url("test", conn)),
    ]
    assert "Authentication failed" in text_of(pages[-1])
    for page in pages:
        assert page.status_code in (200, 422), page
        body = page.content.decode()
        assert TOKEN not in body and HEADER_VALUE not in body
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "operator olga created connection gated" in logged
    assert "secrets: token set, headers set" in logged
    assert "secrets: token replaced" in logged
    assert TOKEN not in logged and HEADER_VALUE not in logged
    # Nor did anything reach the audit trail.
    from mrtrweb.calls.models import Event

    for detail in Event.objects.values_list("detail", flat=True):
        assert TOKEN not in str(detail)


def test_error_reports_hide_the_secret_fields(web: Client) -> None:
    """Django's error pages and mails must not carry the posted token or headers."""
    from django.views.debug import SafeExceptionReporterFilter

    data = form_data(bearer_token=TOKEN, oauth_client_secret=TOKEN, oauth_private_key=TOKEN)
    request = web.post(url("create"), data).wsgi_request
    assert tuple(request.sensitive_post_parameters) == (
        "bearer_token",
        "headers",
        "oauth_client_secret",
        "oauth_private_key",
    )
    cleaned = SafeExceptionReporterFilter().get_post_parameters(request)
    assert TOKEN not in str(cleaned)


def test_a_server_echoing_a_secret_in_its_error_is_redacted() -> None:
    from mrtrweb.servers.catalog import ProbeReport
    from mrtrweb.servers.probe import probe_summary

    conn = Connection(bearer_token=TOKEN, headers={"X-Api-Key": HEADER_VALUE, "X-Short": "ab"})
    report = ProbeReport(
        ok=False,
        error=f"HTTPStatusError: HTTP 400 without a JSON-RPC error body: 'bad {TOKEN} "
        f"and {HEADER_VALUE} (ab)'",
    )
    result = probe_summary(report, conn)
    assert result["error"] == (
        "HTTPStatusError: HTTP 400 without a JSON-RPC error body: 'bad [secret] and [secret] (ab)'"
    )
    assert result["kind"] == "protocol"
