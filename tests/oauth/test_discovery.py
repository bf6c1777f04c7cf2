"""Discovery against a real authorization server and protected resource: where the client
looks, in what order, and what it refuses."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest

from mrtrweb.oauth import (
    Challenge,
    Discovery,
    DiscoveryError,
    IssuerMismatch,
    ResourceMismatch,
    discover,
)
from tests.oauth.server import OAuthPeer


async def challenge_of(peer: OAuthPeer, http: httpx.AsyncClient) -> Challenge:
    answer = await http.post(peer.url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert answer.status_code == 401
    return Challenge.parse(answer.status_code, answer.headers["www-authenticate"])


def test_the_challenge_is_read_whatever_else_the_header_holds() -> None:
    header = (
        'DPoP algs="ES256", Bearer error="insufficient_scope", scope="files:read files:write", '
        'resource_metadata="https://mcp.example/.well-known/oauth-protected-resource/mcp", '
        'error_description="needs, more"'
    )
    challenge = Challenge.parse(403, header)
    assert challenge.error == "insufficient_scope" and challenge.insufficient_scope
    assert challenge.scope == ("files:read", "files:write")
    assert challenge.resource_metadata == (
        "https://mcp.example/.well-known/oauth-protected-resource/mcp"
    )
    assert Challenge.parse(401, None) == Challenge(status=401)


async def test_the_challenge_says_where_the_metadata_is(
    oauth_peer: Callable[..., OAuthPeer], http: httpx.AsyncClient
) -> None:
    peer = oauth_peer()
    found = await discover(http, peer.url, await challenge_of(peer, http))
    assert found.resource == peer.url
    assert found.issuer == peer.issuer()
    assert found.resource_metadata_url == f"{peer.base}/.well-known/oauth-protected-resource/mcp"
    assert found.token_endpoint == f"{peer.issuer()}/token"
    # Only the published URL was read: no guessing at the root.
    assert not peer.requests_to("/.well-known/oauth-protected-resource")
    assert Discovery.from_json(found.to_json()) == found


async def test_without_a_challenge_the_path_based_url_comes_before_the_root(
    oauth_peer: Callable[..., OAuthPeer], http: httpx.AsyncClient
) -> None:
    peer = oauth_peer(prm_path_based=False, prm_in_challenge=False, prm_resource=None)
    found = await discover(http, peer.url, await challenge_of(peer, http))
    prm_requests = [e["path"] for e in peer.log if "oauth-protected-resource" in e["path"]]
    assert prm_requests == [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ]
    assert found.resource_metadata_url == f"{peer.base}/.well-known/oauth-protected-resource"


@pytest.mark.parametrize("metadata_at", ["oauth", "oidc", "oidc-appended"])
async def test_an_issuer_with_a_path_is_never_looked_up_at_the_root(
    metadata_at: str, oauth_peer: Callable[..., OAuthPeer], http: httpx.AsyncClient
) -> None:
    peer = oauth_peer(issuer_path="/tenant1", metadata_at=metadata_at)
    found = await discover(http, peer.url, await challenge_of(peer, http))
    assert found.issuer == f"{peer.base}/tenant1"
    looked_at = [
        e["path"] for e in peer.log if "authorization-server" in e["path"] or "openid" in e["path"]
    ]
    expected = [
        "/.well-known/oauth-authorization-server/tenant1",
        "/.well-known/openid-configuration/tenant1",
        "/tenant1/.well-known/openid-configuration",
    ]
    assert looked_at == expected[: expected.index(peer.metadata_path("/tenant1")) + 1]
    assert "/.well-known/oauth-authorization-server" not in looked_at
    assert "/.well-known/openid-configuration" not in looked_at


async def test_metadata_whose_issuer_differs_is_refused(
    oauth_peer: Callable[..., OAuthPeer], http: httpx.AsyncClient
) -> None:
    peer = oauth_peer(metadata_issuer="https://attacker.example.com")
    with pytest.raises(IssuerMismatch, match="attacker"):
        await discover(http, peer.url, await challenge_of(peer, http))


async def test_a_trailing_slash_is_a_different_issuer(
    oauth_peer: Callable[..., OAuthPeer], http: httpx.AsyncClient
) -> None:
    peer = oauth_peer()
    peer.behaviour.metadata_issuer = peer.issuer() + "/"
    with pytest.raises(IssuerMismatch):
        await discover(http, peer.url, await challenge_of(peer, http))


async def test_metadata_for_another_resource_is_refused(
    oauth_peer: Callable[..., OAuthPeer], http: httpx.AsyncClient
) -> None:
    peer = oauth_peer(prm_resource="https://evil.example.com/mcp")
    with pytest.raises(ResourceMismatch, match=r"evil\.example\.com"):
        await discover(http, peer.url, await challenge_of(peer, http))
    # Refused before the authorization server was even asked.
    assert not [e for e in peer.log if "authorization-server" in e["path"]]


async def test_a_resource_may_speak_for_the_whole_origin_and_is_kept_as_published(
    oauth_peer: Callable[..., OAuthPeer], http: httpx.AsyncClient
) -> None:
    peer = oauth_peer()
    peer.behaviour.prm_resource = peer.base  # no trailing slash: sent back exactly so
    found = await discover(http, peer.url, await challenge_of(peer, http))
    assert found.resource == peer.base


async def test_a_sibling_path_is_another_resource(
    oauth_peer: Callable[..., OAuthPeer], http: httpx.AsyncClient
) -> None:
    peer = oauth_peer()
    peer.behaviour.prm_resource = f"{peer.base}/mcp-admin"
    with pytest.raises(ResourceMismatch):
        await discover(http, peer.url, await challenge_of(peer, http))


async def test_no_metadata_anywhere_is_a_discovery_error(
    oauth_peer: Callable[..., OAuthPeer], http: httpx.AsyncClient
) -> None:
    peer = oauth_peer()  # it publishes metadata for /mcp only
    with pytest.raises(DiscoveryError, match="No protected resource metadata"):
        await discover(http, f"{peer.base}/other")
    assert [e["path"] for e in peer.log] == [
        "/.well-known/oauth-protected-resource/other",
        "/.well-known/oauth-protected-resource",
    ]
