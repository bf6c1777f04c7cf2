"""URLs a server chooses are fetched only where the address rules or the operator allow.

A hostile MCP server (tests/oauth/server.py, real HTTP on loopback) answers 401 with a
``resource_metadata`` that points somewhere else: another loopback port (a stand-in for an
internal service), the cloud metadata address, or its own ``/moved`` that redirects to that
port. The connection's own origin is loopback too, and stays reachable: the server's own
401 is read. End users read one plain sentence; operators read why.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import time_machine
from django.urls import reverse
from django.utils import timezone

from mrtrweb.authorizations.failures import FAILURE_KEPT
from mrtrweb.authorizations.models import Discovery
from mrtrweb.servers.models import Connection
from tests.authorizations.conftest import listed, signed_in
from tests.oauth.server import Behaviour, OAuthPeer, running
from tests.servers.test_console import form_data
from tests.support.factories import make_connection

PLAIN = "sign-in could not be set up; ask your operator"


@pytest.fixture
def internal() -> Iterator[OAuthPeer]:
    """A service on another loopback port: what an attacker would like mrtrweb to read."""
    with running() as peer:
        yield peer


@pytest.fixture
def hostile() -> Iterator[OAuthPeer]:
    with running(Behaviour()) as peer:
        yield peer


@pytest.fixture
def connection(db: Any, hostile: OAuthPeer) -> Connection:
    return listed(make_connection(peer=None, name="hostile", url=hostile.url))


def connect_page(connection: Connection) -> str:
    return reverse("authorizations:connect", kwargs={"connection": connection.name})


def panel(connection: Connection) -> str:
    return reverse("authorizations:connection", kwargs={"name": connection.name})


def console_post(browser: Any, connection: Connection, **fields: str) -> Any:
    """The console's connection form, posted as it stands with ``fields`` changed."""
    data = form_data(name=connection.name, url=connection.url, auth=connection.auth, **fields)
    return browser.post(reverse("servers:edit", kwargs={"name": connection.name}), data)


def _points_at(hostile: OAuthPeer, url: str) -> None:
    hostile.behaviour.challenge_metadata = url


def _assert_plain(body: str, *hidden: str) -> None:
    assert PLAIN in body
    for text in hidden:
        assert text not in body


def test_metadata_on_another_loopback_port_is_not_fetched(
    ada: Any, olga: Any, connection: Connection, hostile: OAuthPeer, internal: OAuthPeer
) -> None:
    _points_at(hostile, f"{internal.base}/.well-known/oauth-protected-resource/mcp")
    page = signed_in(ada).get(connect_page(connection))
    assert page.status_code == 502
    assert hostile.requests_to("/mcp"), "the server's own 401 is read"
    assert internal.log == [], "the address the server named was not requested"
    _assert_plain(page.content.decode(), str(internal.port), "HTTP", "resource")
    details = signed_in(olga).get(panel(connection)).content.decode()
    assert f"127.0.0.1:{internal.port}" in details
    assert "127.0.0.1 is not a public address" in details
    # An operator who opens the connect page itself reads the same details there.
    own_view = signed_in(olga).get(connect_page(connection)).content.decode()
    assert f"127.0.0.1:{internal.port}" in own_view
    assert internal.log == []
    assert not Discovery.objects.exists()


def test_a_name_is_vetted_by_the_addresses_it_resolves_to(
    ada: Any, olga: Any, connection: Connection, hostile: OAuthPeer, internal: OAuthPeer
) -> None:
    # No address in the URL to judge before sending: the name is resolved and every address
    # vetted when connecting, and the connection goes to the vetted one.
    _points_at(hostile, f"http://localhost:{internal.port}/.well-known/oauth-protected-resource")
    page = signed_in(ada).get(connect_page(connection))
    assert page.status_code == 502
    assert internal.log == []
    _assert_plain(page.content.decode(), "localhost")
    details = signed_in(olga).get(panel(connection)).content.decode()
    assert "is not a public address (not allowed for this connection)" in details


def test_the_cloud_metadata_address_is_refused_without_connecting(
    ada: Any, olga: Any, connection: Connection, hostile: OAuthPeer
) -> None:
    _points_at(hostile, "http://169.254.169.254/latest/meta-data/iam/security-credentials/")
    page = signed_in(ada).get(connect_page(connection))
    assert page.status_code == 502
    _assert_plain(page.content.decode(), "169.254", "meta-data")
    details = signed_in(olga).get(panel(connection)).content.decode()
    # Refused by the rules before any connection (not a timeout, not a refused port).
    assert "169.254.169.254 is a link-local, multicast or unspecified address" in details


def test_a_redirect_from_the_servers_own_origin_is_not_followed(
    ada: Any, olga: Any, connection: Connection, hostile: OAuthPeer, internal: OAuthPeer
) -> None:
    hostile.behaviour.moved_to = f"{internal.base}/.well-known/oauth-protected-resource/mcp"
    _points_at(hostile, f"{hostile.base}/moved")
    page = signed_in(ada).get(connect_page(connection))
    assert page.status_code == 502
    assert hostile.requests_to("/moved"), "its own origin is fetched"
    assert internal.log == []
    _assert_plain(page.content.decode(), "302", "moved")
    assert "HTTP 302" in signed_in(olga).get(panel(connection)).content.decode()


def test_a_posted_connect_tells_the_person_the_same_sentence(
    ada: Any, connection: Connection, hostile: OAuthPeer, internal: OAuthPeer
) -> None:
    _points_at(hostile, f"{internal.base}/.well-known/oauth-protected-resource/mcp")
    response = signed_in(ada).post(connect_page(connection), {"next": "/"})
    assert response.status_code == 502
    _assert_plain(response.content.decode(), str(internal.port))
    assert internal.log == []


def test_a_second_page_view_within_the_cache_time_fetches_nothing(
    ada: Any, bob: Any, connection: Connection, hostile: OAuthPeer, internal: OAuthPeer
) -> None:
    _points_at(hostile, f"{internal.base}/.well-known/oauth-protected-resource/mcp")
    with time_machine.travel(timezone.now(), tick=False) as clock:
        assert signed_in(ada).get(connect_page(connection)).status_code == 502
        asked = len(hostile.log)
        clock.shift(FAILURE_KEPT / 2)
        again = signed_in(bob).get(connect_page(connection))
        assert again.status_code == 502
        assert PLAIN in again.content.decode()
        assert len(hostile.log) == asked, "answered from the remembered failure"
        clock.shift(FAILURE_KEPT)
        assert signed_in(ada).get(connect_page(connection)).status_code == 502
        assert len(hostile.log) > asked, "tried again once the failure is old"
    assert internal.log == []


def test_the_operators_allowance_lets_the_connection_reach_its_authorization_server(
    ada: Any, connection: Connection, hostile: OAuthPeer, internal: OAuthPeer
) -> None:
    # The metadata and its authorization server live on another (internal) port, which the
    # operator allows for this connection only.
    internal.behaviour.prm_resource = hostile.url
    _points_at(hostile, f"{internal.base}/.well-known/oauth-protected-resource/mcp")
    assert signed_in(ada).get(connect_page(connection)).status_code == 502
    Connection.objects.filter(pk=connection.pk).update(
        oauth_allowed_hosts="127.0.0.0/8", oauth_failed_at=None
    )
    page = signed_in(ada).get(connect_page(connection))
    assert page.status_code == 200, page.content.decode()
    assert Discovery.objects.get(connection=connection).issuer == internal.issuer()
    assert internal.requests_to("/.well-known/oauth-authorization-server")


def test_the_allowance_is_set_in_the_console_and_junk_is_refused(
    olga: Any, connection: Connection
) -> None:
    refused = console_post(signed_in(olga), connection, oauth_allowed_hosts="10.0.0.0/8 a b@c")
    assert refused.status_code == 422
    assert "is neither a host name" in refused.content.decode()
    connection.oauth_failed_at = timezone.now()
    connection.save()
    saved = console_post(
        signed_in(olga), connection, oauth_allowed_hosts="Auth.Internal.Example, 10.0.0.0/8"
    )
    assert saved.status_code == 303
    connection.refresh_from_db()
    assert connection.oauth_allowed_hosts == "auth.internal.example\n10.0.0.0/8"
    assert connection.oauth_failed_at is None, "new settings are tried at once"
