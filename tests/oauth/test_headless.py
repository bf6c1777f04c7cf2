"""The MCP client's authenticator hook, with the headless authenticator, against a real
protected MCP server and its authorization server."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import httpx
import pytest

from mrtrweb.mcp import (
    AuthenticationRequired,
    Authenticator,
    AuthorizationRequired,
    ConnectionSettings,
    MCPClient,
    NotDelivered,
    forget_era,
)
from tests.oauth.conftest import headless, mcp_client
from tests.oauth.server import OAuthPeer


def mcp_requests(peer: OAuthPeer) -> list[dict[str, Any]]:
    return peer.requests_to("/mcp")


async def test_a_401_is_answered_by_authorizing_and_resending(
    oauth_peer: Callable[..., OAuthPeer], http: httpx.AsyncClient
) -> None:
    peer = oauth_peer(prm_scopes=["read"])
    auth = headless(http, peer)
    assert isinstance(auth, Authenticator)
    async with mcp_client(peer, auth) as client:
        await client.discover()
        tools = await client.list_tools()
    assert [tool.name for tool in tools.items] == ["whoami"]
    first, resent, listing = mcp_requests(peer)
    assert "authorization" not in first["headers"]
    assert resent["headers"]["authorization"] == f"Bearer {auth.tokens.access_token}"
    assert first["json"]["method"] == resent["json"]["method"] == "server/discover"
    assert first["json"]["id"] != resent["json"]["id"]  # a resend is a new request
    assert listing["headers"]["authorization"] == resent["headers"]["authorization"]
    assert auth.authorizations == 1 and auth.identity.registered_via == "dynamic"
    assert peer.requests_to("/authorize")[0]["query"]["scope"] == "read"


async def test_an_expired_token_is_refreshed_once_and_the_request_resent(
    oauth_peer: Callable[..., OAuthPeer], http: httpx.AsyncClient
) -> None:
    peer = oauth_peer()
    auth = headless(http, peer)
    async with mcp_client(peer, auth) as client:
        await client.list_tools()
        old = auth.tokens
        peer.expire_access_tokens()  # the server says 401; the token's own expiry is later
        await client.list_tools(use_cache=False)
    assert auth.refreshes == 1 and auth.authorizations == 1
    assert auth.tokens.refresh_token != old.refresh_token  # rotated, and the new one kept
    grants = [e["form"]["grant_type"] for e in peer.requests_to("/token")]
    assert grants == ["authorization_code", "refresh_token"]


async def test_a_token_about_to_expire_is_refreshed_before_it_is_sent(
    oauth_peer: Callable[..., OAuthPeer], http: httpx.AsyncClient
) -> None:
    peer = oauth_peer(access_ttl=5)  # inside the refresh margin from the start
    auth = headless(http, peer)
    async with mcp_client(peer, auth) as client:
        await client.list_tools()
        await client.list_tools(use_cache=False)
    assert auth.refreshes >= 1
    statuses = [e["headers"].get("authorization") for e in mcp_requests(peer)]
    assert statuses[0] is None and all(statuses[1:])


async def test_a_revoked_refresh_token_leads_to_a_new_authorization(
    oauth_peer: Callable[..., OAuthPeer], http: httpx.AsyncClient
) -> None:
    peer = oauth_peer()
    auth = headless(http, peer)
    async with mcp_client(peer, auth) as client:
        await client.list_tools()
        peer.expire_access_tokens()
        peer.revoke_refresh_tokens()
        await client.list_tools(use_cache=False)
    assert auth.refreshes == 1 and auth.authorizations == 2


async def test_a_step_up_asks_for_the_union_of_scopes(
    oauth_peer: Callable[..., OAuthPeer], http: httpx.AsyncClient
) -> None:
    peer = oauth_peer(prm_scopes=["read"], method_scopes={"tools/call": ["write"]})
    auth = headless(http, peer)
    async with mcp_client(peer, auth) as client:
        await client.list_tools()
        result = await client.call_tool("whoami", {})
    assert not isinstance(result, dict) and result.content[0].text == "you"
    scopes = [e["query"].get("scope") for e in peer.requests_to("/authorize")]
    assert scopes == ["read", "read write"]
    assert auth.tokens.scope == ("read", "write")


async def test_step_ups_stop_after_three(
    oauth_peer: Callable[..., OAuthPeer], http: httpx.AsyncClient
) -> None:
    peer = oauth_peer(prm_scopes=["read"], endless_step_up=True)
    auth = headless(http, peer)
    async with mcp_client(peer, auth) as client:
        await client.list_tools()
        with pytest.raises(AuthorizationRequired, match="after 3 step-ups") as gave_up:
            await client.call_tool("whoami", {})
    assert gave_up.value.http_status == 403
    assert 'error="insufficient_scope"' in (gave_up.value.www_authenticate or "")
    scopes = [e["query"].get("scope") for e in peer.requests_to("/authorize")]
    assert scopes == [
        "read",
        "read scope-1",
        "read scope-1 scope-2",
        "read scope-1 scope-2 scope-3",
    ]
    calls = [e for e in mcp_requests(peer) if e["json"]["method"] == "tools/call"]
    assert len(calls) == 4 and len({e["json"]["id"] for e in calls}) == 4


async def test_a_server_that_needs_a_person_stops_a_headless_client(
    oauth_peer: Callable[..., OAuthPeer], http: httpx.AsyncClient
) -> None:
    peer = oauth_peer(approve=False)
    async with mcp_client(peer, headless(http, peer)) as client:
        with pytest.raises(AuthorizationRequired, match="did not approve without a person") as why:
            await client.list_tools()
    assert isinstance(why.value, NotDelivered)  # nothing ran on the server
    assert not peer.requests_to("/token")


async def test_a_refused_callback_is_reported_and_nothing_is_resent(
    oauth_peer: Callable[..., OAuthPeer], http: httpx.AsyncClient
) -> None:
    peer = oauth_peer(iss_mode="wrong")
    async with mcp_client(peer, headless(http, peer)) as client:
        with pytest.raises(AuthorizationRequired, match="mix-up"):
            await client.list_tools()
    assert len(mcp_requests(peer)) == 1 and not peer.requests_to("/token")


async def test_a_moved_authorization_server_gets_a_new_registration(
    oauth_peer: Callable[..., OAuthPeer], http: httpx.AsyncClient
) -> None:
    peer = oauth_peer(issuer_path="/as1")
    auth = headless(http, peer)
    async with mcp_client(peer, auth) as client:
        await client.list_tools()
        first = auth.identity
        peer.active_issuer_path = "/as2"
        peer.expire_access_tokens()
        peer.revoke_refresh_tokens()
        await client.list_tools(use_cache=False)
    assert first.issuer == f"{peer.base}/as1" and auth.identity.issuer == f"{peer.base}/as2"
    assert auth.identity.client_id != first.client_id
    assert len(peer.requests_to("/as2/register")) == 1
    (at_as2,) = peer.requests_to("/as2/authorize")
    assert at_as2["query"]["client_id"] == auth.identity.client_id


async def test_a_move_is_noticed_even_when_the_old_server_would_refresh(
    oauth_peer: Callable[..., OAuthPeer], http: httpx.AsyncClient
) -> None:
    # The old authorization server still refreshes, but its tokens no longer open the MCP
    # server: the 401's fresh discovery shows the move, so the client registers with the new
    # one at once instead of refreshing in circles.
    peer = oauth_peer(issuer_path="/as1", prm_scopes=["read"])
    auth = headless(http, peer)
    async with mcp_client(peer, auth) as client:
        await client.list_tools()
        peer.active_issuer_path = "/as2"
        peer.expire_access_tokens()
        await client.list_tools(use_cache=False)
    assert auth.refreshes == 0 and auth.identity.issuer == f"{peer.base}/as2"
    assert [e["form"]["grant_type"] for e in peer.requests_to("/as2/token")] == [
        "authorization_code"
    ]
    assert peer.requests_to("/as2/authorize")[0]["query"]["scope"] == "read"


class CountingAuthenticator:
    """A fixed token that is never renewed: ``challenged`` answers ``renew``."""

    def __init__(self, renew: bool) -> None:
        self.renew = renew
        self.challenges: list[tuple[int, str | None]] = []

    async def headers(self) -> Mapping[str, str]:
        return {"Authorization": "Bearer not-a-token-of-this-server"}

    async def challenged(self, http_status: int, www_authenticate: str | None) -> bool:
        self.challenges.append((http_status, www_authenticate))
        return self.renew


@pytest.mark.parametrize("renew", [False, True])
async def test_a_401_is_resent_at_most_once(
    renew: bool, oauth_peer: Callable[..., OAuthPeer]
) -> None:
    peer = oauth_peer()
    auth = CountingAuthenticator(renew)
    async with mcp_client(peer, auth) as client:
        with pytest.raises(AuthorizationRequired) as gave_up:
            await client.list_tools()
    assert len(auth.challenges) == 1 and auth.challenges[0][0] == 401
    assert "resource_metadata" in (auth.challenges[0][1] or "")
    assert len(mcp_requests(peer)) == (2 if renew else 1)
    assert gave_up.value.http_status == 401
    assert not isinstance(gave_up.value, AuthenticationRequired)


async def test_without_an_authenticator_a_401_is_authentication_required(
    oauth_peer: Callable[..., OAuthPeer],
) -> None:
    peer = oauth_peer()
    forget_era(peer.url)
    settings = ConnectionSettings(url=peer.url, bearer_token="stale")
    async with MCPClient(settings) as client:
        with pytest.raises(AuthenticationRequired) as refused:
            await client.list_tools()
    assert isinstance(refused.value, AuthorizationRequired)
    assert isinstance(refused.value, NotDelivered)
    assert refused.value.http_status == 401 and len(mcp_requests(peer)) == 1
