"""authorizations.flow directly: where people may be sent back to, and which client identity
mrtrweb presents (against the OAuth peer)."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import RequestFactory

from mrtrweb.authorizations import addresses, flow
from mrtrweb.authorizations.models import ClientRegistration, Discovery
from mrtrweb.servers.models import Connection
from tests.authorizations.oauth_peer import OAuthPeer

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("wanted", "expected"),
    [
        ("/calls/start/files/?tool=echo", "/calls/start/files/?tool=echo"),
        ("/calls/7/", "/calls/7/"),
        ("//evil.example/", "/home/"),
        ("/\\evil.example", "/home/"),
        ("https://evil.example/", "/home/"),
        ("http://testserver/calls/", "/home/"),  # local, but only paths are kept
        ("javascript:alert(1)", "/home/"),
        ("calls/", "/home/"),
        ("", "/home/"),
        (None, "/home/"),
    ],
)
def test_safe_return_to(wanted: str | None, expected: str) -> None:
    request = RequestFactory().get("/")
    assert addresses.safe_return_to(request, wanted, "/home/") == expected


def test_metadata_document_first_even_with_preregistered_credentials(
    connection: Connection, peer: OAuthPeer
) -> None:
    peer.cimd = True
    connection.oauth_client_id = "pre-client"
    connection.oauth_client_secret = "pre-sekret-secret"
    connection.save()
    discovery = flow.discovery_for(connection)
    registration, identity = flow.client_for(connection, discovery)
    assert identity.registered_via == "metadata-document"
    assert identity.client_id == addresses.metadata_document_url()
    assert registration.client_secret == ""


def test_preregistered_before_dynamic_and_a_later_client_id_wins(
    connection: Connection, peer: OAuthPeer
) -> None:
    discovery = flow.discovery_for(connection)
    _, dynamic = flow.client_for(connection, discovery)
    assert dynamic.registered_via == "dynamic"
    _, again = flow.client_for(connection, discovery)
    assert again.client_id == dynamic.client_id  # kept, not registered twice
    assert len(peer.clients) == 1

    connection.oauth_client_id = "pre-client"
    connection.save()
    registration, identity = flow.client_for(connection, discovery)
    assert identity.registered_via == "pre-registered"
    assert registration.client_id == "pre-client"
    assert ClientRegistration.objects.count() == 1  # one record per issuer


def test_discovery_is_kept_while_fresh_and_redone_on_demand(
    connection: Connection, peer: OAuthPeer
) -> None:
    first = flow.discovery_for(connection)
    assert first.resource == peer.mcp_url
    assert (
        first.resource_metadata_url == f"{peer.base_url}/.well-known/oauth-protected-resource/mcp"
    )
    peer.scopes = ("files:read", "files:admin")
    assert flow.discovery_for(connection).scopes_supported == ("files:read", "files:write")
    again = flow.discovery_for(connection, refresh=True)
    assert again.scopes_supported == ("files:read", "files:admin")
    assert Discovery.objects.get().document["scopes_supported"] == ["files:read", "files:admin"]


def test_no_registration_possible_is_said_in_words(connection: Connection, peer: OAuthPeer) -> None:
    peer.registration = False
    discovery = flow.discovery_for(connection)
    with pytest.raises(flow.FlowError, match="ask its operator for a client ID"):
        flow.client_for(connection, discovery)


def test_unreachable_server_is_said_in_words(db: Any) -> None:
    from tests.support.factories import make_connection

    gone = make_connection(name="gone")
    with pytest.raises(flow.FlowError, match="OAuth discovery failed"):
        flow.discovery_for(gone)
