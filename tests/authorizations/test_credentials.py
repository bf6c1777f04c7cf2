"""The database-backed authenticator against a real OAuth-protected MCP server
(tests/authorizations/store_peer.py): whose token goes out, refresh ahead of expiry and once
on a 401, a dead grant marked for reconnecting, client credentials fetched and fetched again."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from mrtrweb.authorizations import refresh, store
from mrtrweb.authorizations.credentials import DatabaseAuthenticator, authenticator_for
from mrtrweb.authorizations.models import Authorization, ClientRegistration
from mrtrweb.mcp import AuthorizationRequired, MCPClient
from mrtrweb.servers.models import Connection
from tests.authorizations.store_peer import CLIENT_ID, CLIENT_SECRET, SCOPE, Authority, OAuthPeer
from tests.authorizations.store_support import connect, oauth_connection, serve_peer
from tests.support.factories import make_user

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def oauth_peer() -> Iterator[OAuthPeer]:
    yield from serve_peer()


def call_echo(conn: Connection, authenticator: DatabaseAuthenticator | None) -> Any:
    """One tools/call through mrtrweb's MCP client, as the engine sends it."""
    settings = dataclasses.replace(conn.client_settings(), authenticator=authenticator)

    async def go() -> Any:
        async with MCPClient(settings) as client:
            return await client.call_tool("echo", {"text": "hi"})

    return asyncio.run(go())


def echo_calls(authority: Authority) -> list[str | None]:
    """Whose token each tools/call of echo carried (None: none, or a dead one)."""
    return [who for who, method, tool in authority.seen if tool == "echo"]


def test_no_authenticator_without_oauth(oauth_peer: OAuthPeer) -> None:
    for auth in (Connection.Auth.NONE, Connection.Auth.HEADER):
        conn = oauth_connection(oauth_peer, auth, name=f"c-{auth}")
        assert authenticator_for(conn, make_user(f"u-{auth}")) is None


def test_a_persons_token_goes_out_and_nobody_elses(oauth_peer: OAuthPeer) -> None:
    ada, bob = make_user("ada"), make_user("bob")
    conn = oauth_connection(oauth_peer)
    connect(conn, ada, oauth_peer)
    connect(conn, bob, oauth_peer)
    result = call_echo(conn, authenticator_for(conn, ada))
    assert not result.is_error
    call_echo(conn, authenticator_for(conn, bob))
    assert echo_calls(oauth_peer.authority) == ["ada", "bob"]
    assert oauth_peer.authority.refreshes() == []


def test_not_connected_sends_nothing_and_names_the_person(oauth_peer: OAuthPeer) -> None:
    ada = make_user("ada", first_name="Ada", last_name="Lovelace")
    conn = oauth_connection(oauth_peer, title="Guarded server")
    authenticator = authenticator_for(conn, ada)
    assert authenticator is not None
    assert authenticator.headers_now() == {}
    with pytest.raises(AuthorizationRequired):
        call_echo(conn, authenticator)
    assert echo_calls(oauth_peer.authority) == [None]  # one try, refused, not repeated
    assert authenticator.reason == (
        "Ada Lovelace has not connected their account on Guarded server yet"
    )


def test_a_token_about_to_expire_is_refreshed_first(oauth_peer: OAuthPeer) -> None:
    ada = make_user("ada")
    conn = oauth_connection(oauth_peer)
    before = connect(conn, ada, oauth_peer, expires_in=30)  # within the 60 s ahead
    call_echo(conn, authenticator_for(conn, ada))
    after = Authorization.objects.get(pk=before.pk)
    assert oauth_peer.authority.refreshes() == ["refresh"]
    assert echo_calls(oauth_peer.authority) == ["ada"]  # no 401 first: renewed before
    assert after.version == before.version + 1
    assert after.access_token != before.access_token
    # The rotated refresh token is the one stored: the old one is dead at the server.
    assert after.refresh_token == oauth_peer.authority.current_refresh_token("ada")
    assert after.refresh_token != before.refresh_token
    assert after.expires_at > timezone.now() + timedelta(minutes=50)
    assert after.last_refresh_at is not None


def test_a_401_refreshes_once_and_the_request_is_sent_again(oauth_peer: OAuthPeer) -> None:
    ada = make_user("ada")
    conn = oauth_connection(oauth_peer)
    connect(conn, ada, oauth_peer)
    oauth_peer.authority.expire_access_tokens()  # the server's view: our token is dead
    result = call_echo(conn, authenticator_for(conn, ada))
    assert not result.is_error
    assert echo_calls(oauth_peer.authority) == [None, "ada"]
    assert oauth_peer.authority.refreshes() == ["refresh"]


def test_a_revoked_grant_asks_the_person_to_reconnect(oauth_peer: OAuthPeer) -> None:
    ada = make_user("ada", first_name="Ada", last_name="Lovelace")
    conn = oauth_connection(oauth_peer, title="Guarded server")
    before = connect(conn, ada, oauth_peer)
    oauth_peer.authority.revoke("ada")
    authenticator = authenticator_for(conn, ada)
    with pytest.raises(AuthorizationRequired):
        call_echo(conn, authenticator)
    row = Authorization.objects.get(pk=before.pk)
    assert row.status == Authorization.Status.RECONNECT
    assert "invalid_grant" in row.reason
    assert oauth_peer.authority.refreshes() == ["refused"]
    assert authenticator.reason.startswith("Ada Lovelace must reconnect their account on Guarded")
    # Next time nothing goes out at all: the person must reconnect first.
    again = authenticator_for(conn, ada)
    with pytest.raises(AuthorizationRequired, match="Ada Lovelace must reconnect"):
        call_echo(conn, again)
    assert echo_calls(oauth_peer.authority) == [None]
    # Connecting again makes it work.
    connect(conn, ada, oauth_peer)
    assert not call_echo(conn, authenticator_for(conn, ada)).is_error


def test_a_person_cannot_be_stepped_up_without_them(oauth_peer: OAuthPeer) -> None:
    ada = make_user("ada")
    conn = oauth_connection(oauth_peer)
    before = connect(conn, ada, oauth_peer)
    oauth_peer.authority.tool_scopes["echo"] = "admin"
    authenticator = authenticator_for(conn, ada)
    with pytest.raises(AuthorizationRequired):
        call_echo(conn, authenticator)
    row = Authorization.objects.get(pk=before.pk)
    assert row.status == Authorization.Status.RECONNECT
    assert row.wanted_scopes.split() == [SCOPE, "admin"]
    assert "more access" in authenticator.reason
    assert oauth_peer.authority.refreshes() == []


def test_client_credentials_fetch_and_fetch_again(oauth_peer: OAuthPeer) -> None:
    conn = oauth_connection(
        oauth_peer,
        Connection.Auth.CLIENT_CREDENTIALS,
        oauth_client_id=CLIENT_ID,
        oauth_client_secret=CLIENT_SECRET,
    )
    nobody = make_user("ada")
    assert not call_echo(conn, authenticator_for(conn, nobody)).is_error
    row = Authorization.objects.get(connection=conn)
    assert row.user is None and row.kind == Authorization.Kind.CLIENT_CREDENTIALS
    assert row.scopes == SCOPE  # the resource's scopes_supported
    assert oauth_peer.authority.refreshes() == ["client_credentials"]
    # The stored token is reused...
    call_echo(conn, authenticator_for(conn, nobody))
    assert oauth_peer.authority.refreshes() == ["client_credentials"]
    # ...until the server refuses it: a new one is fetched, and the request sent again.
    oauth_peer.authority.expire_access_tokens()
    assert not call_echo(conn, authenticator_for(conn, nobody)).is_error
    assert oauth_peer.authority.refreshes() == ["client_credentials"] * 2
    # A tool that needs more: asked again with the union of the scopes.
    oauth_peer.authority.tool_scopes["echo"] = "admin"
    assert not call_echo(conn, authenticator_for(conn, nobody)).is_error
    assert Authorization.objects.get(connection=conn).scopes.split() == [SCOPE, "admin"]
    assert echo_calls(oauth_peer.authority) == ["machine"] * 2 + [None, "machine"] + [
        "machine",
        "machine",
    ]


def test_wrong_client_credentials_are_refused_plainly(oauth_peer: OAuthPeer) -> None:
    conn = oauth_connection(
        oauth_peer,
        Connection.Auth.CLIENT_CREDENTIALS,
        oauth_client_id=CLIENT_ID,
        oauth_client_secret="cs-sekret-wrong",
    )
    authenticator = authenticator_for(conn, make_user("ada"))
    with pytest.raises(
        AuthorizationRequired, match=r"refused .*client credentials .*invalid_client"
    ):
        call_echo(conn, authenticator)
    assert authenticator.reason == ""  # no person can cure it: the engine fails it
    assert echo_calls(oauth_peer.authority) == []


def test_no_token_is_ever_logged(oauth_peer: OAuthPeer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    ada = make_user("ada")
    conn = oauth_connection(oauth_peer)
    connect(conn, ada, oauth_peer, expires_in=10)
    call_echo(conn, authenticator_for(conn, ada))  # refreshed ahead
    oauth_peer.authority.expire_access_tokens()
    call_echo(conn, authenticator_for(conn, ada))  # refreshed on 401
    oauth_peer.authority.revoke("ada")
    oauth_peer.authority.expire_access_tokens()
    with pytest.raises(AuthorizationRequired):
        call_echo(conn, authenticator_for(conn, ada))  # refused: reconnect
    assert oauth_peer.authority.refreshes() == ["refresh", "refresh", "refused"]
    assert any("refreshed" in r.getMessage() for r in caplog.records)
    for record in caplog.records:
        assert "sekret" not in record.getMessage()
        assert "sekret" not in str(record.args)
    row = Authorization.objects.get(connection=conn, user=ada)
    assert "sekret" not in row.reason and "sekret" not in repr(authenticator_for(conn, ada))


def test_client_credentials_use_the_operators_client_after_a_change_of_mode(
    oauth_peer: OAuthPeer,
) -> None:
    # The connection was per person first: it registered a client of its own at the issuer.
    conn = oauth_connection(oauth_peer, Connection.Auth.OAUTH_PERSON)
    discovery = refresh.discovery_for_connection(conn)
    ClientRegistration.objects.create(
        connection=conn,
        issuer=discovery.issuer,
        client_id="dynamic-client",
        client_secret="dyn-sekret-1",
        token_endpoint_auth_method="client_secret_post",
        registered_via=ClientRegistration.Via.DYNAMIC,
    )
    Connection.objects.filter(pk=conn.pk).update(
        auth=Connection.Auth.CLIENT_CREDENTIALS,
        oauth_client_id=CLIENT_ID,
        oauth_client_secret=CLIENT_SECRET,
    )
    conn.refresh_from_db()
    identity = store.client_identity(conn, discovery)
    assert identity is not None and identity.client_id == CLIENT_ID
    assert not call_echo(conn, authenticator_for(conn, make_user("ada"))).is_error
    assert echo_calls(oauth_peer.authority)[-1] == "machine"


def test_primed_headers_go_with_the_first_request_inside_and_no_later_one(
    oauth_peer: OAuthPeer,
) -> None:
    ada = make_user("ada")
    conn = oauth_connection(oauth_peer)
    connect(conn, ada, oauth_peer)
    authenticator = authenticator_for(conn, ada)
    assert authenticator is not None
    with authenticator.primed():
        # Read when primed: what is stored afterwards does not change this request.
        Authorization.objects.filter(user=ada).delete()
        assert not call_echo(conn, authenticator).is_error
    # Outside the block the headers are read again: nobody is connected any more.
    with pytest.raises(AuthorizationRequired):
        call_echo(conn, authenticator)
    assert echo_calls(oauth_peer.authority) == ["ada", None]


def test_a_failure_to_read_primed_headers_is_raised_by_the_request(
    oauth_peer: OAuthPeer,
) -> None:
    ada = make_user("ada", first_name="Ada", last_name="Lovelace")
    conn = oauth_connection(oauth_peer, title="Guarded server")
    connect(conn, ada, oauth_peer)
    Authorization.objects.filter(user=ada).update(
        status=Authorization.Status.RECONNECT, reason="revoked"
    )
    authenticator = authenticator_for(conn, ada)
    assert authenticator is not None
    with authenticator.primed(), pytest.raises(AuthorizationRequired, match="must reconnect"):
        call_echo(conn, authenticator)
    assert echo_calls(oauth_peer.authority) == []  # nothing went out
