"""The console on OAuth connections: the test, the catalog and the exposure pages list with
the right account (the operator's own, the shared one, the client's), and say what to do
when there is none. Against the OAuth peer with a real MCP server behind it."""

from __future__ import annotations

from collections.abc import Iterator
from html import unescape
from typing import Any

import pytest
from django.test import Client

from mrtrweb.authorizations.models import Authorization
from mrtrweb.people.roles import OPERATORS, ensure_roles
from mrtrweb.servers.models import Connection
from tests.authorizations.conftest import local, signed_in
from tests.authorizations.oauth_peer import OAuthPeer, oauth_peer
from tests.support.factories import make_connection, make_user

pytestmark = pytest.mark.django_db

TEST = "/operators/files/test/"
EDIT = "/operators/files/edit/"


@pytest.fixture
def peer() -> Iterator[OAuthPeer]:
    with oauth_peer(mcp=True) as running:
        yield running


@pytest.fixture
def olga(db: Any) -> Any:
    ensure_roles()
    return make_user("olga", OPERATORS)


def protected(peer: OAuthPeer, **fields: Any) -> Connection:
    return make_connection(name="files", url=peer.mcp_url, **fields)


def connect(browser: Client, peer: OAuthPeer, next_: str = EDIT) -> None:
    sent_to = browser.post("/oauth/connect/files/", {"next": next_})
    assert sent_to.status_code == 303, sent_to.content.decode()[:500]
    assert browser.get(local(peer.browse(sent_to["Location"])))["Location"] == next_


def test_per_person_test_asks_the_operator_to_connect_then_uses_their_account(
    olga: Any, peer: OAuthPeer
) -> None:
    protected(peer, auth="oauth-person")
    console = signed_in(olga)
    body = unescape(console.post(TEST).content.decode())
    assert "An account is needed" in body
    assert "connect your own account, then test again" in body
    assert 'href="/oauth/connect/files/?next=/operators/files/edit/"' in body

    connect(console, peer)
    token = Authorization.objects.get(user=olga).access_token
    body = console.post(TEST).content.decode()
    assert "The connection works" in body
    assert peer.mcp_bearers[-1] == token
    assert "echo" in console.get("/operators/files/catalog/").content.decode()


def test_shared_test_needs_the_shared_account(olga: Any, peer: OAuthPeer) -> None:
    protected(peer, auth="oauth-shared")
    console = signed_in(olga)
    body = console.post(TEST).content.decode()
    assert "connect the shared account" in body
    assert "Connect the shared account</a>" in body
    connect(console, peer)
    assert Authorization.objects.get().user is None
    assert "The connection works" in console.post(TEST).content.decode()


def test_client_credentials_test_fetches_its_own_token(olga: Any, peer: OAuthPeer) -> None:
    peer.add_client("machine", "machine-sekret-secret", "client_secret_basic")
    protected(
        peer,
        auth="client-credentials",
        oauth_client_id="machine",
        oauth_client_secret="machine-sekret-secret",
    )
    body = signed_in(olga).post(TEST).content.decode()
    assert "The connection works" in body
    authorization = Authorization.objects.get()
    assert authorization.kind == "client-credentials"
    assert peer.mcp_bearers[-1] == authorization.access_token


def test_client_credentials_refused_says_what_to_check(olga: Any, peer: OAuthPeer) -> None:
    protected(
        peer,
        auth="client-credentials",
        oauth_client_id="unknown",
        oauth_client_secret="wrong-sekret-secret",
    )
    body = signed_in(olga).post(TEST).content.decode()
    assert "An account is needed" in body
    assert "check the client ID, secret or key" in body
    assert 'href="/oauth/connections/files/"' in body
