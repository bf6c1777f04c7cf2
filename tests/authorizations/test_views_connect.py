"""Connect → the authorization server → callback, driven through the Django test client
against a real (small) OAuth server (tests/authorizations/oauth_peer.py)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from django.db import connection as db
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from mrtrweb.authorizations.models import (
    Authorization,
    ClientRegistration,
    Discovery,
    PendingAuthorization,
)
from mrtrweb.authorizations.signals import connected
from mrtrweb.servers.models import Connection
from tests.authorizations.conftest import local, signed_in
from tests.authorizations.oauth_peer import OAuthPeer

pytestmark = pytest.mark.django_db

START = "/calls/start/files/?tool=echo"


def connect_url(connection: Connection) -> str:
    return reverse("authorizations:connect", kwargs={"connection": connection.name})


def go_to_server(browser: Client, connection: Connection, next_: str = START) -> str:
    """Press "Connect your account": where the browser is sent (the authorization request)."""
    response = browser.post(connect_url(connection), {"next": next_})
    assert response.status_code == 303, response.content.decode()[:2000]
    return response["Location"]


def approve(browser: Client, peer: OAuthPeer, connection: Connection, **kwargs: Any) -> Any:
    """The whole round trip; the callback's response."""
    back = peer.browse(go_to_server(browser, connection, **kwargs))
    return browser.get(local(back))


def refused(browser: Client, url: str) -> Any:
    """Open the callback ``url``, expecting a refusal: the page that says why (its own
    address, so the code and state are in no page)."""
    response = browser.get(url)
    assert response.status_code == 303, response.status_code
    assert response["Location"] == "/oauth/not-connected/"
    page = browser.get(response["Location"])
    assert page.status_code == 400
    return page


def raw_columns(authorization: Authorization) -> tuple[str, str]:
    with db.cursor() as cursor:
        cursor.execute(
            "SELECT access_token, refresh_token FROM authorizations_authorization WHERE id = %s",
            [authorization.pk],
        )
        return cursor.fetchone()


def test_connect_page_explains_and_posts(ada: Any, connection: Connection, peer: OAuthPeer) -> None:
    browser = signed_in(ada)
    page = browser.get(connect_url(connection) + "?" + urlencode({"next": START}))
    body = page.content.decode()
    assert page.status_code == 200
    assert "Connect your account on files server" in body
    assert connection.url in body
    assert 'name="csrfmiddlewaretoken"' in body
    assert f'value="{START.replace("&", "&amp;")}"' in body
    # Which authorization server, and what it will be asked for.
    assert f"at <strong>{peer.issuer}</strong>" in body
    assert "It asks for: <code>files:read</code>, <code>files:write</code>." in body


def test_connect_page_says_when_the_server_cannot_be_connected(
    ada: Any, olga: Any, connection: Connection, peer: OAuthPeer
) -> None:
    peer.resource = "https://elsewhere.example/mcp"
    page = signed_in(ada).get(connect_url(connection))
    assert page.status_code == 502
    body = page.content.decode()
    # The person is told whom to ask; what the server's metadata said is for operators.
    assert "sign-in could not be set up; ask your operator" in body
    assert "elsewhere.example" not in body
    panel = signed_in(olga).get(reverse("authorizations:connection", args=[connection.name]))
    assert "metadata names another server" in panel.content.decode()


def test_connect_and_callback_save_the_tokens_encrypted(
    ada: Any, connection: Connection, peer: OAuthPeer, django_capture_on_commit_callbacks: Any
) -> None:
    browser = signed_in(ada)
    sent_to = go_to_server(browser, connection)
    query = parse_qs(urlsplit(sent_to).query)
    assert sent_to.startswith(f"{peer.base_url}/authorize?")
    assert query["resource"] == [peer.mcp_url]
    assert query["code_challenge_method"] == ["S256"]
    assert query["redirect_uri"] == ["http://127.0.0.1:8000/oauth/callback/"]
    # Discovery, and a dynamic registration (the peer offers no metadata documents here).
    assert Discovery.objects.get(connection=connection).issuer == peer.issuer
    registration = ClientRegistration.objects.get(connection=connection)
    assert registration.registered_via == "dynamic"
    assert peer.clients[registration.client_id]["grant_types"] == [
        "authorization_code",
        "refresh_token",
    ]
    pending = PendingAuthorization.objects.get()
    assert pending.state_digest != query["state"][0]  # only its digest is kept

    heard: list[dict[str, Any]] = []

    def listener(**kwargs: Any) -> None:
        heard.append(kwargs)

    connected.connect(listener)
    try:
        with django_capture_on_commit_callbacks(execute=True):
            back = browser.get(local(peer.browse(sent_to)))
    finally:
        connected.disconnect(listener)
    assert back.status_code == 303
    assert back["Location"] == START

    authorization = Authorization.objects.get(connection=connection, user=ada)
    assert authorization.status == Authorization.Status.ACTIVE
    assert authorization.kind == Authorization.Kind.PERSON
    assert authorization.version == 1
    assert authorization.access_token in peer.access_tokens
    assert authorization.refresh_token in peer.refresh_tokens
    assert authorization.scope_list == ["files:read", "files:write"]
    assert authorization.expires_at is not None
    assert authorization.expires_at > timezone.now() + timedelta(minutes=50)
    raw_access, raw_refresh = raw_columns(authorization)
    assert authorization.access_token not in raw_access and "sekret" not in raw_access
    assert authorization.refresh_token not in raw_refresh and "sekret" not in raw_refresh
    assert not PendingAuthorization.objects.exists()
    assert heard == [
        {"signal": connected, "sender": Authorization, "connection": connection, "user": ada}
    ]
    # The token request carried the verifier and the resource exactly.
    exchange = peer.token_requests[-1]
    assert exchange["grant_type"] == "authorization_code"
    assert exchange["resource"] == peer.mcp_url


def test_connecting_again_replaces_the_tokens_and_bumps_the_version(
    ada: Any, connection: Connection, peer: OAuthPeer
) -> None:
    browser = signed_in(ada)
    approve(browser, peer, connection)
    first = Authorization.objects.get(user=ada)
    Authorization.objects.filter(pk=first.pk).update(status="reconnect", reason="expired")
    approve(browser, peer, connection)
    again = Authorization.objects.get(user=ada)
    assert again.pk == first.pk
    assert again.version == 2
    assert again.status == "active" and again.reason == ""
    assert again.access_token != first.access_token
    # The dynamic registration was kept, not made twice.
    assert len(peer.clients) == 1


def test_client_id_metadata_document_when_the_server_supports_it(
    ada: Any, connection: Connection, peer: OAuthPeer, client: Client
) -> None:
    peer.cimd = True
    browser = signed_in(ada)
    response = approve(browser, peer, connection)
    assert response.status_code == 303
    registration = ClientRegistration.objects.get(connection=connection)
    assert registration.registered_via == "metadata-document"
    assert registration.client_id == "http://127.0.0.1:8000/oauth/client-metadata.json"
    assert peer.clients == {}  # nothing registered dynamically
    assert Authorization.objects.get(user=ada).status == "active"


def test_the_client_id_metadata_document(client: Client) -> None:
    response = client.get("/oauth/client-metadata.json")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert "public" in response["Cache-Control"]
    document = response.json()
    assert document["client_id"] == "http://127.0.0.1:8000/oauth/client-metadata.json"
    assert document["redirect_uris"] == ["http://127.0.0.1:8000/oauth/callback/"]
    assert document["token_endpoint_auth_method"] == "none"
    assert document["grant_types"] == ["authorization_code", "refresh_token"]
    assert document["client_name"] == "mrtrweb"
    assert "client_secret" not in document


def test_preregistered_credentials_when_no_metadata_documents(
    ada: Any, connection: Connection, peer: OAuthPeer
) -> None:
    peer.add_client("pre-client", "pre-sekret-secret", "client_secret_basic")
    connection.oauth_client_id = "pre-client"
    connection.oauth_client_secret = "pre-sekret-secret"
    connection.save()
    browser = signed_in(ada)
    assert approve(browser, peer, connection).status_code == 303
    registration = ClientRegistration.objects.get(connection=connection)
    assert registration.registered_via == "pre-registered"
    assert registration.client_id == "pre-client"
    assert peer.clients.keys() == {"pre-client"}
    assert Authorization.objects.get(user=ada).status == "active"


def test_a_new_authorization_server_gets_a_new_registration(
    ada: Any, connection: Connection, peer: OAuthPeer
) -> None:
    browser = signed_in(ada)
    approve(browser, peer, connection)
    ClientRegistration.objects.update(issuer="https://old-issuer.example")
    Discovery.objects.update(discovered_at=timezone.now() - timedelta(days=1))
    approve(browser, peer, connection)
    issuers = set(ClientRegistration.objects.values_list("issuer", flat=True))
    assert issuers == {"https://old-issuer.example", peer.issuer}
    assert len(peer.clients) == 2  # registered again at the (new) issuer


# -- refusals: nothing saved --------------------------------------------------------------


def test_state_from_another_session_is_refused(
    ada: Any, connection: Connection, peer: OAuthPeer
) -> None:
    back = peer.browse(go_to_server(signed_in(ada), connection))
    other_session = signed_in(ada)  # the same person, another browser
    response = refused(other_session, local(back))
    assert response.status_code == 400
    assert "another browser session" in response.content.decode()
    assert not Authorization.objects.exists()
    assert PendingAuthorization.objects.count() == 1  # still theirs to finish


def test_state_of_another_person_is_refused(
    ada: Any, bob: Any, connection: Connection, peer: OAuthPeer
) -> None:
    back = peer.browse(go_to_server(signed_in(ada), connection))
    response = refused(signed_in(bob), local(back))
    assert response.status_code == 400
    assert "started by someone else" in response.content.decode()
    assert not Authorization.objects.exists()


def test_replayed_state_is_refused(ada: Any, connection: Connection, peer: OAuthPeer) -> None:
    browser = signed_in(ada)
    back = peer.browse(go_to_server(browser, connection))
    assert browser.get(local(back)).status_code == 303
    version = Authorization.objects.get().version
    replay = refused(browser, local(back))
    assert replay.status_code == 400
    assert "used already" in replay.content.decode()
    assert Authorization.objects.get().version == version


def test_unknown_or_missing_state_is_refused(ada: Any, connection: Connection) -> None:
    browser = signed_in(ada)
    refused(browser, "/oauth/callback/?code=x&state=forged")
    refused(browser, "/oauth/callback/?code=x")
    assert not Authorization.objects.exists()


def test_expired_pending_request_is_refused(
    ada: Any, connection: Connection, peer: OAuthPeer
) -> None:
    browser = signed_in(ada)
    back = peer.browse(go_to_server(browser, connection))
    PendingAuthorization.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    response = refused(browser, local(back))
    assert response.status_code == 400
    assert "expired" in response.content.decode()
    assert not Authorization.objects.exists()
    assert not PendingAuthorization.objects.exists()


def test_wrong_iss_is_refused(ada: Any, connection: Connection, peer: OAuthPeer) -> None:
    browser = signed_in(ada)
    back = peer.browse(go_to_server(browser, connection))
    forged = back.replace(
        urlencode({"iss": peer.issuer}), urlencode({"iss": "https://evil.example"})
    )
    assert forged != back
    response = refused(browser, local(forged))
    assert response.status_code == 400
    assert "mix-up" in response.content.decode()
    assert not Authorization.objects.exists()
    assert not any(r.get("grant_type") == "authorization_code" for r in peer.token_requests)


def test_access_denied_is_shown_and_nothing_saved(
    ada: Any, connection: Connection, peer: OAuthPeer
) -> None:
    peer.deny = True
    browser = signed_in(ada)
    response = refused(browser, local(peer.browse(go_to_server(browser, connection))))
    assert "was not granted" in response.content.decode()
    assert not Authorization.objects.exists()
    assert not PendingAuthorization.objects.exists()


@pytest.mark.parametrize(
    "wanted",
    ["//evil.example/x", "https://evil.example/", "/\\evil.example", "javascript:alert(1)"],
)
def test_no_open_redirect_after_the_callback(
    wanted: str, ada: Any, connection: Connection, peer: OAuthPeer
) -> None:
    browser = signed_in(ada)
    page = browser.get(connect_url(connection) + "?" + urlencode({"next": wanted}))
    body = page.content.decode()
    assert 'name="next" value="/oauth/accounts/"' in body  # the page's own links and forms
    assert 'href="/oauth/accounts/">Not now' in body
    response = approve(browser, peer, connection, next_=wanted)
    assert response.status_code == 303
    assert response["Location"] == "/oauth/accounts/"
    # And if a row somehow held one, the callback checks it again.
    back = peer.browse(go_to_server(browser, connection))
    PendingAuthorization.objects.update(return_to=wanted)
    assert browser.get(local(back))["Location"] == "/oauth/accounts/"


def test_mismatched_resource_is_refused_with_a_clear_message(
    ada: Any, connection: Connection, peer: OAuthPeer
) -> None:
    peer.resource = "https://elsewhere.example/mcp"
    response = signed_in(ada).post(connect_url(connection), {"next": START})
    body = response.content.decode()
    assert response.status_code == 502
    assert "Could not connect" in body
    assert "sign-in could not be set up; ask your operator" in body
    assert "elsewhere.example" not in body
    assert not PendingAuthorization.objects.exists()
    assert not Discovery.objects.exists()


def test_person_must_be_able_to_use_the_connection(
    ada: Any, connection: Connection, peer: OAuthPeer
) -> None:
    connection.exposures.update(exposed=False)
    assert signed_in(ada).get(connect_url(connection)).status_code == 404
    assert signed_in(ada).post(connect_url(connection)).status_code == 404


def test_signed_out_people_are_sent_to_sign_in(connection: Connection) -> None:
    response = Client().get(connect_url(connection))
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_connect_needs_csrf(ada: Any, connection: Connection) -> None:
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(ada)
    assert browser.post(connect_url(connection), {"next": START}).status_code == 403
    assert not PendingAuthorization.objects.exists()


def test_reconnecting_asks_for_the_scopes_a_server_wanted(
    ada: Any, connection: Connection, peer: OAuthPeer
) -> None:
    """A step-up only the person can grant (403 insufficient_scope, marked by the engine's
    authenticator as ``wanted_scopes``) is asked for on the next connect, with the old ones."""
    browser = signed_in(ada)
    approve(browser, peer, connection)
    Authorization.objects.update(status="reconnect", wanted_scopes="files:admin")
    approve(browser, peer, connection)
    asked = peer.authorize_requests[-1]["scope"].split()
    assert asked == ["files:read", "files:write", "files:admin"]
    again = Authorization.objects.get()
    assert again.scope_list == asked
    assert again.wanted_scopes == ""


def test_expired_requests_are_forgotten(ada: Any, connection: Connection, peer: OAuthPeer) -> None:
    browser = signed_in(ada)
    go_to_server(browser, connection)
    PendingAuthorization.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    go_to_server(browser, connection)
    assert PendingAuthorization.objects.count() == 1


def test_signed_out_at_the_callback_gets_no_sign_in_form_holding_the_code(
    ada: Any, connection: Connection, peer: OAuthPeer
) -> None:
    back = peer.browse(go_to_server(signed_in(ada), connection))
    response = Client().get(local(back))
    body = response.content.decode()
    assert response.status_code == 400
    assert "signed out while connecting" in body
    code = parse_qs(urlsplit(back).query)["code"][0]
    assert code not in body and "sekret" not in body
    assert 'href="/accounts/login/?next=/calls/start/"' in body
    assert not Authorization.objects.exists()
