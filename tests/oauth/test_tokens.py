"""Refresh and client credentials against a real token endpoint."""

from __future__ import annotations

import time
from collections.abc import Callable
from urllib.parse import parse_qsl, urlsplit

import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from mrtrweb.oauth import (
    ClientIdentity,
    TokenError,
    TokenSet,
    authorization_request,
    client_credentials,
    discover,
    exchange_code,
    identify,
    refresh,
)
from tests.oauth.conftest import REDIRECT_URI
from tests.oauth.server import OAuthPeer


async def authorized(peer: OAuthPeer, http: httpx.AsyncClient):  # type: ignore[no-untyped-def]
    discovery = await discover(http, peer.url)
    identity = await identify(http, discovery, redirect_uri=REDIRECT_URI, client_name="t")
    request = authorization_request(discovery, identity, redirect_uri=REDIRECT_URI, scopes=("a",))
    answer = await http.get(request.url, follow_redirects=False)
    callback = dict(parse_qsl(urlsplit(answer.headers["location"]).query))
    tokens = await exchange_code(http, discovery, identity, request, callback)
    return discovery, identity, tokens


async def test_a_refresh_rotates_the_refresh_token(
    oauth_peer: Callable[..., OAuthPeer], http: httpx.AsyncClient
) -> None:
    peer = oauth_peer()
    discovery, identity, first = await authorized(peer, http)
    assert first.refresh_token
    second = await refresh(http, discovery, identity, first.refresh_token)
    assert second.access_token != first.access_token
    assert second.refresh_token and second.refresh_token != first.refresh_token
    assert second.scope == ("a",)
    (request,) = [
        e for e in peer.requests_to("/token") if e["form"]["grant_type"] == "refresh_token"
    ]
    assert request["form"]["resource"] == peer.url
    # The old refresh token died with the rotation: using it again is invalid_grant.
    with pytest.raises(TokenError) as dead:
        await refresh(http, discovery, identity, first.refresh_token)
    assert dead.value.invalid_grant and dead.value.http_status == 400


async def test_without_rotation_the_refresh_token_is_kept(
    oauth_peer: Callable[..., OAuthPeer], http: httpx.AsyncClient
) -> None:
    peer = oauth_peer(rotate_refresh=False)
    discovery, identity, first = await authorized(peer, http)
    assert first.refresh_token
    second = await refresh(http, discovery, identity, first.refresh_token)
    assert second.refresh_token == first.refresh_token


async def test_a_revoked_refresh_token_is_invalid_grant(
    oauth_peer: Callable[..., OAuthPeer], http: httpx.AsyncClient
) -> None:
    peer = oauth_peer()
    discovery, identity, tokens = await authorized(peer, http)
    assert tokens.refresh_token
    peer.revoke_refresh_tokens()
    with pytest.raises(TokenError, match="invalid_grant") as revoked:
        await refresh(http, discovery, identity, tokens.refresh_token)
    assert revoked.value.invalid_grant
    assert revoked.value.description == "refresh token revoked"


async def test_a_wrong_client_secret_is_a_token_error_but_not_invalid_grant(
    oauth_peer: Callable[..., OAuthPeer], http: httpx.AsyncClient
) -> None:
    peer = oauth_peer()
    discovery, identity, tokens = await authorized(peer, http)
    assert tokens.refresh_token
    impostor = ClientIdentity(
        identity.issuer, identity.client_id, "wrong", identity.token_endpoint_auth_method, "dynamic"
    )
    with pytest.raises(TokenError) as refused:
        await refresh(http, discovery, impostor, tokens.refresh_token)
    assert refused.value.error == "invalid_client" and not refused.value.invalid_grant


def test_token_sets_round_trip_and_know_when_they_expire() -> None:
    now = time.time()
    tokens = TokenSet.from_response(
        {"access_token": "x", "token_type": "bearer", "expires_in": 60},
        requested=("a", "b"),
        previous_refresh_token="r",
        now=now,
    )
    assert tokens.scope == ("a", "b") and tokens.refresh_token == "r"
    assert tokens.expires_within(61, now=now) and not tokens.expires_within(59, now=now)
    assert TokenSet.from_json(tokens.to_json()) == tokens
    # A token set (or a client identity) in a log line or an error shows no secret.
    assert "'x'" not in repr(tokens) and "'r'" not in repr(tokens)
    identity = ClientIdentity("https://as.example", "client", "s3-sekret", "none", "dynamic")
    assert "s3-sekret" not in repr(identity)
    assert ClientIdentity.from_json(identity.to_json(), client_secret="s3-sekret") == identity
    assert "s3-sekret" not in str(identity.to_json())
    with pytest.raises(TokenError, match="DPoP"):
        TokenSet.from_response({"access_token": "x", "token_type": "DPoP"})


async def test_client_credentials_with_a_secret(
    oauth_peer: Callable[..., OAuthPeer], http: httpx.AsyncClient
) -> None:
    peer = oauth_peer(auth_methods=["client_secret_basic"])
    peer.clients["machine"] = {"secret": "s3-sekret", "method": "client_secret_basic"}
    discovery = await discover(http, peer.url)
    identity = ClientIdentity(
        discovery.issuer, "machine", "s3-sekret", "client_secret_basic", "client-credentials"
    )
    tokens = await client_credentials(http, discovery, identity, scopes=("jobs",))
    assert tokens.scope == ("jobs",) and tokens.refresh_token is None
    (request,) = peer.requests_to("/token")
    assert request["form"]["grant_type"] == "client_credentials"
    assert request["form"]["resource"] == peer.url
    assert request["client_auth"] == "client_secret_basic"


async def test_basic_credentials_are_form_encoded_first(
    oauth_peer: Callable[..., OAuthPeer], http: httpx.AsyncClient
) -> None:
    # RFC 6749 2.3.1: an id or secret holding ":" or "%" survives HTTP Basic only encoded.
    peer = oauth_peer(auth_methods=["client_secret_basic"])
    peer.clients["org:machine"] = {"secret": "p%a:s-sekret", "method": "client_secret_basic"}
    discovery = await discover(http, peer.url)
    identity = ClientIdentity(
        discovery.issuer, "org:machine", "p%a:s-sekret", "client_secret_basic", "client-credentials"
    )
    tokens = await client_credentials(http, discovery, identity)
    assert tokens.access_token
    (request,) = peer.requests_to("/token")
    assert request["client_auth"] == "client_secret_basic"


async def test_client_credentials_with_a_signed_assertion(
    oauth_peer: Callable[..., OAuthPeer], http: httpx.AsyncClient
) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    peer = oauth_peer(auth_methods=["private_key_jwt"], client_public_key=key.public_key())
    discovery = await discover(http, peer.url)
    identity = ClientIdentity(
        discovery.issuer, "machine", None, "private_key_jwt", "client-credentials"
    )
    tokens = await client_credentials(http, discovery, identity, private_key_pem=pem)
    assert tokens.access_token
    (request,) = peer.requests_to("/token")
    # The peer verified the ES256 signature and that the audience is the issuer.
    assert request["client_auth"] == "private_key_jwt"
    assert "client_secret" not in request["form"]
    other = ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    with pytest.raises(TokenError, match="invalid_client"):
        await client_credentials(http, discovery, identity, private_key_pem=other.decode())
