"""The authorization code flow against a real authorization server: what the client sends
(PKCE, resource, scopes, registration) and every callback it refuses."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import parse_qsl, urlsplit

import httpx
import pytest

from mrtrweb.oauth import (
    AuthorizationDenied,
    AuthorizationRequest,
    Challenge,
    ClientIdentity,
    Discovery,
    DiscoveryError,
    IssuerMismatch,
    StateMismatch,
    authorization_request,
    choose_scopes,
    client_metadata_document,
    discover,
    exchange_code,
    identify,
)
from tests.oauth.conftest import REDIRECT_URI
from tests.oauth.server import OAuthPeer


async def discovered(peer: OAuthPeer, http: httpx.AsyncClient) -> tuple[Discovery, Challenge]:
    answer = await http.post(peer.url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    challenge = Challenge.parse(answer.status_code, answer.headers.get("www-authenticate"))
    return await discover(http, peer.url, challenge), challenge


async def registered(
    peer: OAuthPeer, http: httpx.AsyncClient
) -> tuple[Discovery, Challenge, ClientIdentity]:
    discovery, challenge = await discovered(peer, http)
    identity = await identify(http, discovery, redirect_uri=REDIRECT_URI, client_name="tests")
    return discovery, challenge, identity


async def approve(http: httpx.AsyncClient, request: AuthorizationRequest) -> dict[str, str]:
    """What the browser would bring back: the query of the server's redirect."""
    answer = await http.get(request.url, follow_redirects=False)
    assert answer.status_code == 302, answer.text
    return dict(parse_qsl(urlsplit(answer.headers["location"]).query))


async def test_the_whole_flow_sends_pkce_resource_and_state(
    oauth_peer: Callable[..., OAuthPeer], http: httpx.AsyncClient
) -> None:
    peer = oauth_peer(prm_scopes=["files:read"])
    discovery, challenge, identity = await registered(peer, http)
    scopes = choose_scopes(discovery, challenge)
    request = authorization_request(discovery, identity, redirect_uri=REDIRECT_URI, scopes=scopes)
    tokens = await exchange_code(http, discovery, identity, request, await approve(http, request))
    assert tokens.access_token.startswith("at-") and tokens.refresh_token
    assert tokens.scope == ("files:read",)
    assert not tokens.expires_within(60)
    (authorize,) = peer.requests_to("/authorize")
    assert authorize["query"]["code_challenge_method"] == "S256"
    assert authorize["query"]["resource"] == peer.url
    assert authorize["query"]["state"] == request.state
    assert authorize["query"]["scope"] == "files:read"
    (token,) = peer.requests_to("/token")
    assert token["form"]["resource"] == peer.url
    assert token["form"]["code_verifier"] == request.code_verifier
    # The server checked the verifier against the challenge: a code it issued was redeemed.
    assert token["client_auth"] == "client_secret_basic"


async def test_registration_says_what_kind_of_client_this_is(
    oauth_peer: Callable[..., OAuthPeer], http: httpx.AsyncClient
) -> None:
    peer = oauth_peer()
    discovery, _, identity = await registered(peer, http)
    (registration,) = peer.requests_to("/register")
    metadata = registration["json"]
    assert metadata["application_type"] == "web"
    assert "refresh_token" in metadata["grant_types"]
    assert "authorization_code" in metadata["grant_types"]
    assert metadata["redirect_uris"] == [REDIRECT_URI]
    assert identity.registered_via == "dynamic" and identity.issuer == discovery.issuer
    assert identity.client_id in peer.clients


@pytest.mark.parametrize("method", ["client_secret_basic", "client_secret_post", "none"])
async def test_the_token_endpoint_auth_method_is_the_one_offered(
    method: str, oauth_peer: Callable[..., OAuthPeer], http: httpx.AsyncClient
) -> None:
    peer = oauth_peer(auth_methods=[method])
    discovery, _, identity = await registered(peer, http)
    assert identity.token_endpoint_auth_method == method
    request = authorization_request(discovery, identity, redirect_uri=REDIRECT_URI, scopes=())
    await exchange_code(http, discovery, identity, request, await approve(http, request))
    (token,) = peer.requests_to("/token")
    assert token["client_auth"] == method


async def test_a_client_id_metadata_document_comes_first_when_accepted(
    oauth_peer: Callable[..., OAuthPeer], http: httpx.AsyncClient
) -> None:
    peer = oauth_peer(cimd=True, auth_methods=["none"])
    discovery, _ = await discovered(peer, http)
    url = "https://mrtrweb.example/oauth/client.json"
    identity = await identify(
        http,
        discovery,
        redirect_uri=REDIRECT_URI,
        client_name="tests",
        metadata_document_url=url,
        preregistered=ClientIdentity("", "pre", "secret", "client_secret_basic", "pre-registered"),
    )
    assert identity.client_id == url and identity.registered_via == "metadata-document"
    assert identity.client_secret is None and identity.token_endpoint_auth_method == "none"
    assert not peer.requests_to("/register")
    document = client_metadata_document(url, redirect_uris=[REDIRECT_URI], client_name="tests")
    assert document["client_id"] == url and "refresh_token" in document["grant_types"]


async def test_pre_registered_credentials_come_before_registration(
    oauth_peer: Callable[..., OAuthPeer], http: httpx.AsyncClient
) -> None:
    peer = oauth_peer(registration=False, auth_methods=["client_secret_post"])
    discovery, _ = await discovered(peer, http)
    mine = ClientIdentity(discovery.issuer, "pre", "s3-sekret", "", "pre-registered")
    identity = await identify(
        http, discovery, redirect_uri=REDIRECT_URI, client_name="t", preregistered=mine
    )
    assert (identity.client_id, identity.token_endpoint_auth_method) == (
        "pre",
        "client_secret_post",
    )
    # Credentials registered with another issuer are not offered to this one.
    theirs = ClientIdentity("https://other.example", "pre", "s3-sekret", "", "pre-registered")
    with pytest.raises(DiscoveryError, match="no registration endpoint"):
        await identify(
            http, discovery, redirect_uri=REDIRECT_URI, client_name="t", preregistered=theirs
        )


async def test_a_known_identity_is_reused_only_by_its_own_issuer(
    oauth_peer: Callable[..., OAuthPeer], http: httpx.AsyncClient
) -> None:
    peer = oauth_peer()
    discovery, _, first = await registered(peer, http)
    again = await identify(http, discovery, redirect_uri=REDIRECT_URI, client_name="t", known=first)
    assert again is first
    moved = ClientIdentity(
        "https://old-as.example", "old-id", "old", "client_secret_basic", "dynamic"
    )
    fresh = await identify(http, discovery, redirect_uri=REDIRECT_URI, client_name="t", known=moved)
    assert fresh.client_id not in ("old-id", first.client_id)
    assert len(peer.requests_to("/register")) == 2


# -- scopes ----------------------------------------------------------------------------------


async def test_scopes_come_from_the_challenge_first(
    oauth_peer: Callable[..., OAuthPeer], http: httpx.AsyncClient
) -> None:
    peer = oauth_peer(challenge_scope="files:read", prm_scopes=["files:read", "files:write"])
    discovery, challenge = await discovered(peer, http)
    assert choose_scopes(discovery, challenge) == ("files:read",)
    assert choose_scopes(discovery, None) == ("files:read", "files:write")


async def test_without_any_scope_defined_the_parameter_is_left_out(
    oauth_peer: Callable[..., OAuthPeer], http: httpx.AsyncClient
) -> None:
    peer = oauth_peer(as_scopes=["offline_access"])
    discovery, challenge, identity = await registered(peer, http)
    scopes = choose_scopes(discovery, challenge)
    assert scopes == ()
    request = authorization_request(discovery, identity, redirect_uri=REDIRECT_URI, scopes=scopes)
    await approve(http, request)
    assert "scope" not in peer.requests_to("/authorize")[0]["query"]


@pytest.mark.parametrize(
    ("as_scopes", "expected"),
    [
        (["files:read", "offline_access"], ("files:read", "offline_access")),
        (["files:read"], ("files:read",)),
        (None, ("files:read",)),
    ],
)
async def test_offline_access_only_when_the_server_offers_it(
    as_scopes: list[str] | None,
    expected: tuple[str, ...],
    oauth_peer: Callable[..., OAuthPeer],
    http: httpx.AsyncClient,
) -> None:
    peer = oauth_peer(prm_scopes=["files:read"], as_scopes=as_scopes)
    discovery, challenge = await discovered(peer, http)
    assert choose_scopes(discovery, challenge) == expected


async def test_a_step_up_keeps_what_was_asked_before(
    oauth_peer: Callable[..., OAuthPeer], http: httpx.AsyncClient
) -> None:
    peer = oauth_peer(prm_scopes=["files:read"])
    discovery, _ = await discovered(peer, http)
    forbidden = Challenge.parse(403, 'Bearer error="insufficient_scope", scope="files:write"')
    assert choose_scopes(discovery, forbidden, previous=("files:read",)) == (
        "files:read",
        "files:write",
    )


# -- refusals --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("behaviour", "refusal"),
    [
        ({"iss_mode": "wrong"}, IssuerMismatch),
        ({"iss_mode": "wrong", "advertise_iss": None}, IssuerMismatch),
        ({"iss_mode": "normalized"}, IssuerMismatch),
        ({"iss_mode": "missing", "advertise_iss": True}, IssuerMismatch),
        ({"state_mode": "other"}, StateMismatch),
        ({"state_mode": "none"}, StateMismatch),
    ],
)
async def test_a_suspicious_callback_never_reaches_the_token_endpoint(
    behaviour: dict[str, object],
    refusal: type[Exception],
    oauth_peer: Callable[..., OAuthPeer],
    http: httpx.AsyncClient,
) -> None:
    peer = oauth_peer(**behaviour)
    discovery, _, identity = await registered(peer, http)
    request = authorization_request(discovery, identity, redirect_uri=REDIRECT_URI, scopes=())
    callback = await approve(http, request)
    with pytest.raises(refusal):
        await exchange_code(http, discovery, identity, request, callback)
    assert not peer.requests_to("/token")


@pytest.mark.parametrize("advertise_iss", [False, None])
async def test_iss_may_be_missing_when_not_promised(
    advertise_iss: bool | None, oauth_peer: Callable[..., OAuthPeer], http: httpx.AsyncClient
) -> None:
    peer = oauth_peer(iss_mode="missing", advertise_iss=advertise_iss)
    discovery, _, identity = await registered(peer, http)
    request = authorization_request(discovery, identity, redirect_uri=REDIRECT_URI, scopes=())
    tokens = await exchange_code(http, discovery, identity, request, await approve(http, request))
    assert tokens.access_token


async def test_a_callback_for_another_request_is_refused(
    oauth_peer: Callable[..., OAuthPeer], http: httpx.AsyncClient
) -> None:
    # Two requests of the same client: the second one's callback carries the first's code
    # and state (a replay into another session).
    peer = oauth_peer()
    discovery, _, identity = await registered(peer, http)
    first = authorization_request(discovery, identity, redirect_uri=REDIRECT_URI, scopes=())
    second = authorization_request(discovery, identity, redirect_uri=REDIRECT_URI, scopes=())
    assert first.state != second.state and first.code_verifier != second.code_verifier
    assert first.state not in repr(first) and first.code_verifier not in repr(first)
    assert AuthorizationRequest.from_json(first.to_json()) == first
    with pytest.raises(StateMismatch):
        await exchange_code(http, discovery, identity, second, await approve(http, first))


async def test_an_error_answer_is_a_denial(
    oauth_peer: Callable[..., OAuthPeer], http: httpx.AsyncClient
) -> None:
    peer = oauth_peer()
    discovery, _, identity = await registered(peer, http)
    request = authorization_request(discovery, identity, redirect_uri=REDIRECT_URI, scopes=())
    callback = {"error": "access_denied", "state": request.state, "iss": discovery.issuer}
    with pytest.raises(AuthorizationDenied) as denied:
        await exchange_code(http, discovery, identity, request, callback)
    assert denied.value.error == "access_denied"


@pytest.mark.parametrize("methods", [None, ["plain"]])
async def test_a_server_without_pkce_s256_is_refused(
    methods: list[str] | None, oauth_peer: Callable[..., OAuthPeer], http: httpx.AsyncClient
) -> None:
    peer = oauth_peer(code_challenge_methods=methods)
    discovery, _, identity = await registered(peer, http)
    with pytest.raises(DiscoveryError, match="PKCE"):
        authorization_request(discovery, identity, redirect_uri=REDIRECT_URI, scopes=())
