"""Connected accounts, disconnecting, the operators' OAuth panel, shared and client-credential
authorizations; and no page ever shows a token, a verifier or a client secret."""

from __future__ import annotations

from html import unescape
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from mrtrweb.authorizations.models import Authorization, ClientRegistration, PendingAuthorization
from mrtrweb.servers.models import Connection
from tests.authorizations.conftest import local, signed_in
from tests.authorizations.oauth_peer import OAuthPeer
from tests.authorizations.test_views_connect import (
    START,
    approve,
    connect_url,
    go_to_server,
    refused,
)

pytestmark = pytest.mark.django_db

ACCOUNTS = "/oauth/accounts/"


def panel_url(connection: Connection) -> str:
    return reverse("authorizations:connection", kwargs={"name": connection.name})


def disconnect_url(authorization: Authorization) -> str:
    return reverse("authorizations:disconnect", kwargs={"pk": authorization.pk})


def secrets_of(peer: OAuthPeer) -> list[str]:
    """Everything secret the peer issued, and every secret mrtrweb holds for it."""
    values = [*peer.access_tokens, *peer.refresh_tokens, *peer.revoked, *peer.codes]
    values += [c.get("client_secret") or "" for c in peer.clients.values()]
    values += [r.client_secret for r in ClientRegistration.objects.all()]
    for pending in PendingAuthorization.objects.all():
        values += [pending.request.get("code_verifier", ""), pending.request.get("state", "")]
    for authorization in Authorization.objects.all():
        values += [authorization.access_token, authorization.refresh_token]
    return [v for v in values if v]


def assert_no_secret(response: Any, peer: OAuthPeer) -> None:
    body = response.content.decode()
    for secret in secrets_of(peer):
        assert secret not in body
    assert "sekret" not in body


def test_accounts_page_lists_my_connections(
    ada: Any, bob: Any, connection: Connection, peer: OAuthPeer
) -> None:
    browser = signed_in(ada)
    approve(browser, peer, connection)
    approve(signed_in(bob), peer, connection)
    page = browser.get(ACCOUNTS)
    body = page.content.decode()
    assert page.status_code == 200
    assert "files server" in body
    assert "files:read" in body and "files:write" in body
    assert "connected" in body
    mine = Authorization.objects.get(user=ada)
    theirs = Authorization.objects.get(user=bob)
    assert disconnect_url(mine) in body
    assert disconnect_url(theirs) not in body
    assert_no_secret(page, peer)


def test_must_reconnect_offers_reconnect(ada: Any, connection: Connection, peer: OAuthPeer) -> None:
    browser = signed_in(ada)
    approve(browser, peer, connection)
    Authorization.objects.update(status="reconnect", reason="The refresh token was revoked")
    body = browser.get(ACCOUNTS).content.decode()
    assert "must reconnect" in body
    assert "The refresh token was revoked" in body
    assert f"{connect_url(connection)}?next=/oauth/accounts/" in body


def test_the_account_page_and_the_menu_link_here(ada: Any) -> None:
    browser = signed_in(ada)
    assert f'href="{ACCOUNTS}"' in browser.get("/account/two-step/").content.decode()
    assert f'href="{ACCOUNTS}"' in browser.get(ACCOUNTS).content.decode()


def test_disconnect_my_own_revokes_at_the_server(
    ada: Any, connection: Connection, peer: OAuthPeer
) -> None:
    browser = signed_in(ada)
    approve(browser, peer, connection)
    authorization = Authorization.objects.get(user=ada)
    tokens = {authorization.access_token, authorization.refresh_token}
    response = browser.post(disconnect_url(authorization))
    assert response.status_code == 303
    assert response["Location"] == ACCOUNTS
    assert not Authorization.objects.exists()
    assert set(peer.revoked) == tokens
    page = browser.get(ACCOUNTS)
    assert "Disconnected your account on files server." in page.content.decode()
    assert_no_secret(page, peer)


def test_disconnect_someone_elses_is_refused(
    ada: Any, bob: Any, connection: Connection, peer: OAuthPeer
) -> None:
    approve(signed_in(ada), peer, connection)
    authorization = Authorization.objects.get(user=ada)
    assert signed_in(bob).post(disconnect_url(authorization)).status_code == 404
    assert Authorization.objects.filter(pk=authorization.pk).exists()
    assert peer.revoked == []


def test_an_operator_disconnects_anyone(
    ada: Any, olga: Any, connection: Connection, peer: OAuthPeer
) -> None:
    approve(signed_in(ada), peer, connection)
    authorization = Authorization.objects.get(user=ada)
    operator = signed_in(olga)
    response = operator.post(disconnect_url(authorization), {"next": panel_url(connection)})
    assert response["Location"] == panel_url(connection)
    assert not Authorization.objects.exists()
    page = unescape(operator.get(panel_url(connection)).content.decode())
    assert "Disconnected ada's account on files server." in page


def test_disconnect_is_post_only_with_csrf(
    ada: Any, connection: Connection, peer: OAuthPeer
) -> None:
    approve(signed_in(ada), peer, connection)
    authorization = Authorization.objects.get(user=ada)
    assert signed_in(ada).get(disconnect_url(authorization)).status_code == 405
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(ada)
    assert strict.post(disconnect_url(authorization)).status_code == 403
    assert Authorization.objects.exists()


# -- the operators' panel -------------------------------------------------------------------


def test_panel_shows_discovery_and_authorizations(
    ada: Any, olga: Any, connection: Connection, peer: OAuthPeer
) -> None:
    approve(signed_in(ada), peer, connection)
    page = signed_in(olga).get(panel_url(connection))
    body = page.content.decode()
    assert page.status_code == 200
    assert peer.issuer in body
    assert f"{peer.base_url}/token" in body
    assert f"{peer.base_url}/register" in body
    assert peer.mcp_url in body
    assert "dynamic client registration" in body
    assert "ada" in body
    assert "with a secret, not shown" in body
    assert_no_secret(page, peer)


def test_panel_is_for_operators(ada: Any, connection: Connection) -> None:
    assert signed_in(ada).get(panel_url(connection)).status_code == 403
    discover = reverse("authorizations:discover", kwargs={"name": connection.name})
    assert signed_in(ada).post(discover).status_code == 403


def test_discover_now(olga: Any, connection: Connection, peer: OAuthPeer) -> None:
    operator = signed_in(olga)
    assert "Nothing yet" in operator.get(panel_url(connection)).content.decode()
    discover = reverse("authorizations:discover", kwargs={"name": connection.name})
    response = operator.post(discover)
    assert response.status_code == 303
    page = operator.get(panel_url(connection)).content.decode()
    assert f"the authorization server is {peer.issuer}" in page
    assert "files:read" in page


def test_discover_now_shows_a_refusal(olga: Any, connection: Connection, peer: OAuthPeer) -> None:
    peer.resource = "https://elsewhere.example/mcp"
    discover = reverse("authorizations:discover", kwargs={"name": connection.name})
    response = signed_in(olga).post(discover)
    assert response.status_code == 502
    assert "metadata names another server" in response.content.decode()


def test_shared_account_is_connected_by_an_operator(
    ada: Any, olga: Any, connection: Connection, peer: OAuthPeer
) -> None:
    connection.auth = Connection.Auth.OAUTH_SHARED
    connection.save()
    assert signed_in(ada).get(connect_url(connection)).status_code == 403
    operator = signed_in(olga)
    panel = operator.get(panel_url(connection)).content.decode()
    assert "Connect the shared account" in panel
    response = approve(operator, peer, connection, next_=panel_url(connection))
    assert response["Location"] == panel_url(connection)
    shared = Authorization.objects.get()
    assert shared.user is None
    assert shared.kind == Authorization.Kind.SHARED
    page = operator.get(panel_url(connection))
    assert "shared by the connection" in page.content.decode()
    assert_no_secret(page, peer)


def test_client_credentials_token_now(olga: Any, connection: Connection, peer: OAuthPeer) -> None:
    peer.add_client("machine", "machine-sekret-secret", "client_secret_basic")
    connection.auth = Connection.Auth.CLIENT_CREDENTIALS
    connection.oauth_client_id = "machine"
    connection.oauth_client_secret = "machine-sekret-secret"
    connection.oauth_scopes = "files:read"
    connection.save()
    operator = signed_in(olga)
    response = operator.post(reverse("authorizations:client-token", kwargs={"name": "files"}))
    assert response.status_code == 303
    authorization = Authorization.objects.get()
    assert authorization.kind == Authorization.Kind.CLIENT_CREDENTIALS
    assert authorization.user is None
    assert authorization.scope_list == ["files:read"]
    assert authorization.access_token in peer.access_tokens
    assert peer.token_requests[-1]["grant_type"] == "client_credentials"
    page = operator.get(panel_url(connection))
    assert "client credentials" in page.content.decode()
    assert_no_secret(page, peer)
    assert "machine-sekret-secret" not in page.content.decode()


def test_pages_in_progress_show_no_verifier_or_state(
    ada: Any, connection: Connection, peer: OAuthPeer
) -> None:
    browser = signed_in(ada)
    browser.post(connect_url(connection), {"next": START})
    for url in (ACCOUNTS, connect_url(connection), "/oauth/client-metadata.json"):
        assert_no_secret(browser.get(url), peer)
    # A refused callback page repeats nothing it was sent.
    page = refused(browser, "/oauth/callback/?code=code-sekret-x&state=st-sekret-y")
    assert_no_secret(page, peer)
    # The refusal is said once; the page's address then leads on.
    assert browser.get("/oauth/not-connected/")["Location"] == ACCOUNTS


def test_what_a_server_sends_is_escaped(
    ada: Any, olga: Any, connection: Connection, peer: OAuthPeer
) -> None:
    hostile = '<script>alert("x")</script>'
    peer.scopes = (hostile, "files:read")
    approve(signed_in(ada), peer, connection)
    for browser, page in ((signed_in(olga), panel_url(connection)), (signed_in(ada), ACCOUNTS)):
        body = browser.get(page).content.decode()
        assert hostile not in body
        assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in body
    denied = signed_in(ada)
    peer.deny, peer.deny_error, peer.deny_description = True, "server_error", "<b>down</b>"
    page = refused(denied, local(peer.browse(go_to_server(denied, connection))))
    body = page.content.decode()
    assert "<b>down</b>" not in body
    assert "server_error: &lt;b&gt;down&lt;/b&gt;" in body


def test_disconnecting_client_credentials_revokes_with_the_operators_client(
    olga: Any, connection: Connection, peer: OAuthPeer
) -> None:
    peer.add_client("machine-1", "machine-sekret-secret", "client_secret_basic")
    connection.auth = Connection.Auth.CLIENT_CREDENTIALS
    connection.oauth_client_id = "machine-1"
    connection.oauth_client_secret = "machine-sekret-secret"
    connection.save()
    operator = signed_in(olga)
    operator.post(reverse("authorizations:client-token", kwargs={"name": "files"}))
    authorization = Authorization.objects.get()
    token = authorization.access_token
    response = operator.post(disconnect_url(authorization), {"next": panel_url(connection)})
    assert response["Location"] == panel_url(connection)
    assert peer.revoked == [token]
    assert not Authorization.objects.exists()


def test_a_refused_revocation_still_forgets_the_tokens(
    ada: Any, connection: Connection, peer: OAuthPeer
) -> None:
    browser = signed_in(ada)
    approve(browser, peer, connection)
    peer.clients.clear()  # the server forgot mrtrweb's client: it refuses to revoke
    browser.post(disconnect_url(Authorization.objects.get()))
    assert not Authorization.objects.exists()
    assert peer.revoked == []
    page = unescape(browser.get(ACCOUNTS).content.decode())
    assert "(The authorization server did not confirm that it revoked them" in page
