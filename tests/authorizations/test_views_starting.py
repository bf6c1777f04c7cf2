"""Start form → connect your account → back to the start form, nothing typed lost."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from django.test import Client

from mrtrweb.authorizations import flow
from mrtrweb.authorizations.models import Authorization, PendingAuthorization
from mrtrweb.calls.models import Call
from mrtrweb.elicitation.names import field_name_for
from mrtrweb.servers.models import Connection, ToolExposure
from tests.authorizations.conftest import local, signed_in
from tests.authorizations.oauth_peer import OAuthPeer, oauth_peer
from tests.support.factories import make_connection

pytestmark = pytest.mark.django_db

START = "/calls/start/files/?tool=echo"
TEXT, TIMES = f"arg-{field_name_for('text')}", f"arg-{field_name_for('times')}"
TYPED = {TEXT: "hello wörld <b>&amp;</b>", TIMES: "3"}


def start(browser: Client, data: dict[str, str] = TYPED) -> Any:
    return browser.post(START, {**data, "start": "1"})


def known(connection: Connection) -> None:
    """The server was discovered (someone connected before, or an operator discovered it)."""
    flow.discovery_for(connection)


def test_start_sends_to_connect_and_back_with_everything_typed(
    ada: Any, connection: Connection, peer: OAuthPeer
) -> None:
    known(connection)
    browser = signed_in(ada)
    response = start(browser)
    assert response.status_code == 303
    target = urlsplit(response["Location"])
    assert target.path == "/oauth/connect/files/"
    query = parse_qs(target.query)
    assert query["next"] == [START]
    assert not Call.objects.exists()
    # What was typed is kept encrypted, bound to ada, until she is back.
    held = PendingAuthorization.objects.get()
    assert held.draft == {TEXT: [TYPED[TEXT]], TIMES: ["3"]}

    page = browser.get(response["Location"])
    assert page.status_code == 200
    assert f'name="held" value="{query["held"][0]}"' in page.content.decode()
    sent_to = browser.post(
        "/oauth/connect/files/", {"next": query["next"][0], "held": query["held"][0]}
    )
    back = browser.get(local(peer.browse(sent_to["Location"])))
    assert back.status_code == 303
    landing = urlsplit(back["Location"])
    assert landing.path == "/calls/start/files/"
    assert parse_qs(landing.query)["tool"] == ["echo"]
    assert "restore" in parse_qs(landing.query)
    assert Authorization.objects.get(user=ada).status == "active"

    form = browser.get(back["Location"])
    body = form.content.decode()
    assert form.status_code == 200
    assert "Everything you typed is still here" in body
    assert 'value="hello wörld &lt;b&gt;&amp;amp;&lt;/b&gt;"' in body
    assert 'value="3"' in body
    assert "restore=" not in body.split('class="answer-form"')[0].rsplit("<form", 1)[-1]
    assert not PendingAuthorization.objects.exists()
    # Once: the same address again shows an empty form.
    again = browser.get(back["Location"]).content.decode()
    assert "hello wörld" not in again


def test_the_draft_is_for_its_owner_only(
    ada: Any, bob: Any, connection: Connection, peer: OAuthPeer
) -> None:
    known(connection)
    browser = signed_in(ada)
    held = parse_qs(urlsplit(start(browser)["Location"]).query)["held"][0]
    bob_sees = signed_in(bob).get(f"{START}&restore={held}")
    assert "hello wörld" not in bob_sees.content.decode()
    other_session = signed_in(ada).get(f"{START}&restore={held}")
    assert "hello wörld" not in other_session.content.decode()
    # Neither spent it.
    assert browser.get(f"{START}&restore={held}").content.decode().count("hello wörld") == 1


def test_an_invalid_form_is_shown_first_not_sent_to_connect(
    ada: Any, connection: Connection, peer: OAuthPeer
) -> None:
    known(connection)
    response = start(signed_in(ada), {TEXT: "", TIMES: "x"})
    assert response.status_code == 200
    assert not PendingAuthorization.objects.exists()


def test_the_page_offers_to_connect(ada: Any, connection: Connection, peer: OAuthPeer) -> None:
    known(connection)
    body = signed_in(ada).get(START).content.decode()
    assert "asks who you are" in body
    assert "/oauth/connect/files/?next=%2Fcalls%2Fstart%2Ffiles%2F%3Ftool%3Decho" in body


@pytest.mark.parametrize("auth", ["none", "oauth-shared"])
def test_other_modes_start_at_once(
    auth: str, ada: Any, connection: Connection, peer: OAuthPeer, settings: Any
) -> None:
    known(connection)
    connection.auth = auth
    connection.save()
    response = start(signed_in(ada))
    assert response.status_code == 303
    assert not response["Location"].startswith("/oauth/")
    assert Call.objects.count() == 1


def test_an_undiscovered_server_is_not_assumed_to_need_an_account(
    ada: Any, connection: Connection
) -> None:
    response = start(signed_in(ada))
    assert response.status_code == 303
    assert not response["Location"].startswith("/oauth/")
    assert Call.objects.count() == 1


# -- the catalog, listed with the person's own account ----------------------------------------


@pytest.fixture
def mcp_peer(client: Client) -> Any:
    with oauth_peer(mcp=True) as running:
        yield running


@pytest.fixture
def protected(db: Any, mcp_peer: OAuthPeer) -> Connection:
    """A connection to the real MCP server behind the OAuth peer; its catalog not yet listed."""
    conn = make_connection(name="files", url=mcp_peer.mcp_url)
    ToolExposure.objects.create(connection=conn, tool_name="echo", exposed=True)
    return conn


def test_the_catalog_refused_offers_to_connect_then_lists_with_my_token(
    ada: Any, protected: Connection, mcp_peer: OAuthPeer
) -> None:
    browser = signed_in(ada)
    page = browser.get("/calls/start/files/")
    body = page.content.decode()
    assert page.status_code == 200
    assert "asks who you are" in body
    assert "see what it offers" in body
    assert "could not be probed" not in body
    assert mcp_peer.mcp_bearers and not any(mcp_peer.mcp_bearers)

    sent_to = browser.post("/oauth/connect/files/", {"next": "/calls/start/files/"})
    back = browser.get(local(mcp_peer.browse(sent_to["Location"])))
    assert back["Location"] == "/calls/start/files/"
    token = Authorization.objects.get(user=ada).access_token

    listed = browser.get("/calls/start/files/")
    body = listed.content.decode()
    assert "asks who you are" not in body
    assert "Return the text unchanged." in body  # fastmcp's echo, listed with ada's token
    assert token in mcp_peer.mcp_bearers
    assert token not in body
