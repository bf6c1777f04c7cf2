"""The OAuth peer (tests.peers.oauth_server) behaves as README.md says.

Proven over loopback with raw httpx and authlib's OAuth 2 client (not mrtrweb): discovery,
dynamic client registration, the authorization request that approves without a person,
the code exchange with PKCE, refresh-token rotation, revocation, expiry, client ID metadata
documents, and the log that names the grant behind every call's token.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from authlib.common.security import generate_token
from authlib.integrations.httpx_client import OAuth2Client
from authlib.integrations.httpx_client import OAuthError as AuthlibOAuthError
from authlib.oauth2.rfc7636 import create_s256_code_challenge

from tests.peers.fixtures import Peer
from tests.peers.oauth_control import OAuthControl
from tests.peers.wire import accept, call_tool

REDIRECT_URI = "http://127.0.0.1:9/callback"
SCOPE = "mcp:tools"

Factory = Callable[..., Peer]


# --------------------------------------------------------------------------- a tiny client


@dataclass
class Registered:
    client_id: str
    client_secret: str | None
    auth_method: str


def register(peer: Peer, **metadata: Any) -> Registered:
    body = {
        "redirect_uris": [REDIRECT_URI],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "client_name": "oauth peer tests",
        "application_type": "web",
        **metadata,
    }
    response = httpx.post(f"{peer.base_url}/register", json=body, timeout=5.0)
    assert response.status_code == 201, response.text
    info = response.json()
    return Registered(
        info["client_id"], info.get("client_secret"), info["token_endpoint_auth_method"]
    )


def oauth_client(peer: Peer, client: Registered) -> OAuth2Client:
    return OAuth2Client(
        client_id=client.client_id,
        client_secret=client.client_secret,
        token_endpoint_auth_method=client.auth_method,
        redirect_uri=REDIRECT_URI,
        scope=SCOPE,
        code_challenge_method="S256",
        token_endpoint=f"{peer.base_url}/token",
    )


def authorize(
    peer: Peer,
    client: Registered,
    verifier: str,
    *,
    state: str = "st-1",
    cookies: httpx.Cookies | None = None,
    **extra: str,
) -> tuple[httpx.Response, dict[str, str]]:
    """Send the authorization request; the peer answers with the redirect back at once."""
    params = {
        "response_type": "code",
        "client_id": client.client_id,
        "redirect_uri": REDIRECT_URI,
        "scope": SCOPE,
        "state": state,
        "code_challenge": create_s256_code_challenge(verifier),
        "code_challenge_method": "S256",
        "resource": peer.url,
        **extra,
    }
    response = httpx.get(f"{peer.base_url}/authorize", params=params, cookies=cookies)
    assert response.status_code == 302, response.text
    location = response.headers["location"]
    assert location.startswith(REDIRECT_URI + "?")
    query = {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}
    return response, query


def connect(peer: Peer, client: Registered, subject: str | None = None) -> dict[str, Any]:
    """The whole authorization code flow: returns the token response."""
    verifier = generate_token(48)
    extra = {"login_hint": subject} if subject else {}
    _, query = authorize(peer, client, verifier, **extra)
    with oauth_client(peer, client) as oauth:
        return dict(
            oauth.fetch_token(
                code=query["code"],
                code_verifier=verifier,
                resource=peer.url,
                grant_type="authorization_code",
            )
        )


def refresh(peer: Peer, client: Registered, refresh_token: str) -> dict[str, Any]:
    with oauth_client(peer, client) as oauth:
        return dict(oauth.refresh_token(refresh_token=refresh_token, resource=peer.url))


def bearer(token: dict[str, Any] | str) -> dict[str, str]:
    value = token if isinstance(token, str) else token["access_token"]
    return {"Authorization": f"Bearer {value}"}


def challenge(response: httpx.Response) -> str:
    return response.headers.get("www-authenticate", "")


@pytest.fixture
def client(oauth_peer: Peer) -> Registered:
    return register(oauth_peer, token_endpoint_auth_method="client_secret_basic")


# --------------------------------------------------------------------------- discovery


def test_unauthenticated_call_is_challenged_with_resource_metadata(oauth_peer: Peer) -> None:
    reply = call_tool(oauth_peer.url, "echo", {"text": "hi"})
    assert reply.status == 401
    header = challenge(reply.response)
    prm_url = f"{oauth_peer.base_url}/.well-known/oauth-protected-resource/mcp"
    assert header.startswith("Bearer ")
    assert f'resource_metadata="{prm_url}"' in header
    assert 'scope="mcp:tools"' in header
    assert "error=" not in header  # RFC 6750 §3.1: no error without credentials


def test_protected_resource_and_authorization_server_metadata(oauth_peer: Peer) -> None:
    prm = httpx.get(f"{oauth_peer.base_url}/.well-known/oauth-protected-resource/mcp").json()
    assert prm["resource"] == oauth_peer.url
    root = httpx.get(f"{oauth_peer.base_url}/.well-known/oauth-protected-resource")
    assert root.status_code == 404  # only the path-based document exists
    assert prm["scopes_supported"] == ["mcp:tools"]
    [issuer] = prm["authorization_servers"]
    assert issuer == f"{oauth_peer.base_url}/"
    meta = httpx.get(f"{oauth_peer.base_url}/.well-known/oauth-authorization-server").json()
    assert meta["issuer"] == issuer
    assert meta["authorization_endpoint"] == f"{oauth_peer.base_url}/authorize"
    assert meta["token_endpoint"] == f"{oauth_peer.base_url}/token"
    assert meta["registration_endpoint"] == f"{oauth_peer.base_url}/register"
    assert meta["code_challenge_methods_supported"] == ["S256"]
    assert meta["grant_types_supported"] == ["authorization_code", "refresh_token"]
    assert meta["authorization_response_iss_parameter_supported"] is True
    assert set(meta["token_endpoint_auth_methods_supported"]) == {
        "client_secret_basic",
        "client_secret_post",
        "none",
    }
    assert "client_id_metadata_document_supported" not in meta  # only with --cimd
    assert OAuthControl.of(oauth_peer).issuer == issuer


# --------------------------------------------------------------------------- registration


def test_dynamic_client_registration(oauth_peer: Peer) -> None:
    client = register(oauth_peer)
    assert client.client_secret  # confidential by default (client_secret_post)
    assert "sekret" in client.client_secret  # the suite's mark (tests/support/secret_guard.py)
    assert client.auth_method == "client_secret_post"
    public = register(oauth_peer, token_endpoint_auth_method="none")
    assert public.client_secret is None
    clients = {c["client_id"]: c for c in OAuthControl.of(oauth_peer).clients()}
    assert clients[client.client_id]["scope"] == "mcp:tools"  # the default scopes
    assert clients[client.client_id]["redirect_uris"] == [REDIRECT_URI]
    refused = httpx.post(
        f"{oauth_peer.base_url}/register",
        json={"redirect_uris": [REDIRECT_URI], "grant_types": ["client_credentials"]},
    )
    assert refused.status_code == 400
    assert refused.json()["error"] == "invalid_client_metadata"


# --------------------------------------------------------------------------- authorization


def test_authorize_approves_at_once_with_code_state_and_iss(
    oauth_peer: Peer, client: Registered
) -> None:
    control = OAuthControl.of(oauth_peer)
    mark = control.mark()
    _, query = authorize(oauth_peer, client, generate_token(48), state="xyz", login_hint="ada")
    assert set(query) == {"code", "state", "iss"}
    assert query["state"] == "xyz"
    assert query["iss"] == control.issuer
    [event] = control.log("authorize", since=mark)
    assert event["subject"] == "ada"
    assert event["resource"] == oauth_peer.url
    grant = next(g for g in control.grants() if g["serial"] == event["grant"])
    assert grant["subject"] == "ada"
    assert grant["client_id"] == client.client_id
    assert grant["scopes"] == ["mcp:tools"]


def test_authorize_refusals_redirect_with_error_and_iss(
    oauth_peer: Peer, client: Registered
) -> None:
    issuer = OAuthControl.of(oauth_peer).issuer
    _, query = authorize(
        oauth_peer, client, generate_token(48), resource="http://127.0.0.1:1/elsewhere"
    )
    assert query["error"] == "invalid_target"
    assert query["iss"] == issuer
    assert "code" not in query
    _, query = authorize(oauth_peer, client, generate_token(48), scope="admin")
    assert query["error"] == "invalid_scope"
    assert query["iss"] == issuer
    # An unregistered redirect URI is never redirected to.
    response = httpx.get(
        f"{oauth_peer.base_url}/authorize",
        params={
            "response_type": "code",
            "client_id": client.client_id,
            "redirect_uri": "http://127.0.0.1:9/evil",
            "code_challenge": create_s256_code_challenge(generate_token(48)),
            "code_challenge_method": "S256",
        },
    )
    assert response.status_code == 400
    assert "location" not in response.headers


def test_the_browser_session_at_the_peer_is_one_person(
    oauth_peer: Peer, client: Registered
) -> None:
    control = OAuthControl.of(oauth_peer)
    first, _ = authorize(oauth_peer, client, generate_token(48))
    cookies = httpx.Cookies()
    cookies.extract_cookies(first)
    assert "oauth_peer_session" in cookies
    authorize(oauth_peer, client, generate_token(48), cookies=cookies)
    authorize(oauth_peer, client, generate_token(48))  # another browser: another person
    a, b, c = control.grants()[-3:]
    assert a["subject"] == b["subject"]
    assert c["subject"] != a["subject"]
    control.set_subject("forced-person")
    try:
        authorize(oauth_peer, client, generate_token(48), cookies=cookies)
        assert control.grants()[-1]["subject"] == "forced-person"
    finally:
        control.set_subject(None)


# --------------------------------------------------------------------------- tokens


def test_code_exchange_needs_the_pkce_verifier_and_works_once(
    oauth_peer: Peer, client: Registered
) -> None:
    control = OAuthControl.of(oauth_peer)
    verifier = generate_token(48)
    _, query = authorize(oauth_peer, client, verifier)
    with oauth_client(oauth_peer, client) as oauth:
        with pytest.raises(AuthlibOAuthError) as wrong:
            oauth.fetch_token(
                code=query["code"], code_verifier=generate_token(48), resource=oauth_peer.url
            )
        assert wrong.value.error == "invalid_grant"
        mark = control.mark()
        token = oauth.fetch_token(
            code=query["code"], code_verifier=verifier, resource=oauth_peer.url
        )
        assert token["token_type"] == "Bearer"
        assert token["scope"] == "mcp:tools"
        assert token["expires_in"] == 3600
        assert token["refresh_token"]
        # Every secret carries the suite's mark, so the secret guard can find it anywhere.
        assert all("sekret" in token[k] for k in ("access_token", "refresh_token"))
        assert "sekret" in query["code"]
        with pytest.raises(AuthlibOAuthError) as again:
            oauth.fetch_token(code=query["code"], code_verifier=verifier, resource=oauth_peer.url)
        assert again.value.error == "invalid_grant"
    event, reused = control.log("token", since=mark)
    # fastmcp answers invalid_grant with HTTP 401 (not RFC 6749's 400), on purpose.
    assert (reused["status"], reused["error"]) == (401, "invalid_grant")
    # HTTP Basic without client_id in the body (RFC 6749 §2.3.1) is accepted.
    assert event["auth_method"] == "client_secret_basic"
    assert event["resource"] == oauth_peer.url
    assert event["code_verifier_sent"] is True
    assert event["status"] == 200


def test_client_secret_post_and_public_clients(oauth_peer: Peer) -> None:
    for method in ("client_secret_post", "none"):
        client = register(oauth_peer, token_endpoint_auth_method=method)
        token = connect(oauth_peer, client, subject=f"by-{method}")
        reply = call_tool(oauth_peer.url, "whoami", headers=bearer(token))
        assert reply.result["structuredContent"]["subject"] == f"by-{method}"


def test_token_request_for_another_resource_is_refused(
    oauth_peer: Peer, client: Registered
) -> None:
    verifier = generate_token(48)
    _, query = authorize(oauth_peer, client, verifier)
    with oauth_client(oauth_peer, client) as oauth, pytest.raises(AuthlibOAuthError) as refused:
        oauth.fetch_token(
            code=query["code"], code_verifier=verifier, resource="http://127.0.0.1:1/mcp"
        )
    assert refused.value.error == "invalid_target"


def test_call_log_names_the_grant_behind_each_token(oauth_peer: Peer, client: Registered) -> None:
    control = OAuthControl.of(oauth_peer)
    ada = connect(oauth_peer, client, subject="ada")
    bob = connect(oauth_peer, client, subject="bob")
    mark = control.mark()
    for token in (ada, bob):
        reply = call_tool(oauth_peer.url, "whoami", headers=bearer(token))
        assert reply.status == 200
    me = call_tool(oauth_peer.url, "whoami", headers=bearer(ada)).result["structuredContent"]
    assert me["subject"] == "ada"
    assert me["client_id"] == client.client_id
    calls = control.calls("whoami", since=mark)
    assert [c["subject"] for c in calls] == ["ada", "bob", "ada"]
    assert [c["token"] for c in calls] == [
        ada["access_token"],
        bob["access_token"],
        ada["access_token"],
    ]
    assert calls[0]["grant"] == me["grant"] != calls[1]["grant"]
    assert all(c["status"] == 200 and c["token_status"] == "active" for c in calls)


def test_refresh_rotates_both_tokens(oauth_peer: Peer, client: Registered) -> None:
    control = OAuthControl.of(oauth_peer)
    first = connect(oauth_peer, client, subject="rita")
    second = refresh(oauth_peer, client, first["refresh_token"])
    assert second["access_token"] != first["access_token"]
    assert second["refresh_token"] != first["refresh_token"]
    # The rotated refresh token is dead, and so is the access token issued with it.
    with pytest.raises(AuthlibOAuthError) as reused:
        refresh(oauth_peer, client, first["refresh_token"])
    assert reused.value.error == "invalid_grant"
    stale = call_tool(oauth_peer.url, "whoami", headers=bearer(first))
    assert stale.status == 401
    assert 'error="invalid_token"' in challenge(stale.response)
    fresh = call_tool(oauth_peer.url, "whoami", headers=bearer(second))
    assert fresh.result["structuredContent"]["subject"] == "rita"
    records = {r["token"]: r for r in control.tokens()}
    assert records[first["refresh_token"]]["status"] == "rotated"
    assert records[second["refresh_token"]]["status"] == "active"
    assert records[first["refresh_token"]]["grant"] == records[second["access_token"]]["grant"]
    grant = records[second["access_token"]]["grant"]
    assert next(g for g in control.grants() if g["serial"] == grant)["refreshes"] == 1


def test_revoked_refresh_tokens_fail_with_invalid_grant(peer_factory: Factory) -> None:
    peer = peer_factory("oauth_server")
    control = OAuthControl.of(peer)
    client = register(peer, token_endpoint_auth_method="client_secret_basic")
    ada = connect(peer, client, subject="ada")
    bob = connect(peer, client, subject="bob")
    assert control.revoke_refresh_tokens(subject="ada") == 1
    with pytest.raises(AuthlibOAuthError) as refused:
        refresh(peer, client, ada["refresh_token"])
    assert refused.value.error == "invalid_grant"
    # The access token still works until it expires; bob is untouched.
    assert call_tool(peer.url, "whoami", headers=bearer(ada)).status == 200
    assert refresh(peer, client, bob["refresh_token"])["access_token"]
    # Everyone's, with their access tokens.
    carl = connect(peer, client, subject="carl")
    assert control.revoke_refresh_tokens(access_tokens=True) == 2  # bob's new one, carl's
    denied = call_tool(peer.url, "whoami", headers=bearer(carl))
    assert denied.status == 401
    statuses = {r["token"]: r["status"] for r in control.tokens()}
    assert statuses[carl["access_token"]] == statuses[carl["refresh_token"]] == "revoked"


def test_rfc7009_revocation_endpoint(oauth_peer: Peer, client: Registered) -> None:
    token = connect(oauth_peer, client)
    with oauth_client(oauth_peer, client) as oauth:
        response = oauth.revoke_token(
            f"{oauth_peer.base_url}/revoke",
            token=token["refresh_token"],
            token_type_hint="refresh_token",
        )
    assert response.status_code == 200
    with pytest.raises(AuthlibOAuthError):
        refresh(oauth_peer, client, token["refresh_token"])


def test_access_tokens_expire_and_refresh_brings_them_back(peer_factory: Factory) -> None:
    peer = peer_factory("oauth_server", "--access-ttl", "1")
    control = OAuthControl.of(peer)
    client = register(peer, token_endpoint_auth_method="client_secret_basic")
    token = connect(peer, client, subject="eve")
    assert token["expires_in"] == 1
    assert call_tool(peer.url, "whoami", headers=bearer(token)).status == 200
    time.sleep(1.3)
    expired = call_tool(peer.url, "whoami", headers=bearer(token))
    assert expired.status == 401
    header = challenge(expired.response)
    assert 'error="invalid_token"' in header
    assert f'resource_metadata="{peer.base_url}/.well-known/oauth-protected-resource/mcp"' in header
    assert control.calls("whoami")[-1]["token_status"] == "expired"
    renewed = refresh(peer, client, token["refresh_token"])
    assert call_tool(peer.url, "whoami", headers=bearer(renewed)).status == 200


def test_expire_access_tokens_control(oauth_peer: Peer, client: Registered) -> None:
    control = OAuthControl.of(oauth_peer)
    token = connect(oauth_peer, client, subject="expire-me")
    assert control.expire_access_tokens(subject="expire-me") == 1
    assert call_tool(oauth_peer.url, "whoami", headers=bearer(token)).status == 401
    assert refresh(oauth_peer, client, token["refresh_token"])["access_token"]


# --------------------------------------------------------------------------- rounds


def test_a_parked_round_resumes_only_under_the_callers_principal(
    oauth_peer: Peer, client: Registered
) -> None:
    """fastmcp binds requestState to (client, issuer, subject): a resubmission carrying the
    answerer's token is refused by the server; the caller's (even refreshed) completes."""
    control = OAuthControl.of(oauth_peer)
    caller = connect(oauth_peer, client, subject="caller")
    answerer = connect(oauth_peer, client, subject="answerer")
    first = call_tool(
        oauth_peer.url, "request_approval", {"action": "ship"}, headers=bearer(caller)
    )
    assert first.result["resultType"] == "input_required"
    request = first.result["inputRequests"]["approval"]
    assert request["params"]["requestedSchema"]["required"] == ["approve"]
    state = first.result["requestState"]
    answers = {"approval": accept({"approve": True, "note": "ok"})}
    foreign = call_tool(
        oauth_peer.url,
        "request_approval",
        {"action": "ship"},
        input_responses=answers,
        request_state=state,
        headers=bearer(answerer),
    )
    assert foreign.status == 400
    assert foreign.error["message"] == "Invalid or expired requestState"
    renewed = refresh(oauth_peer, client, caller["refresh_token"])
    mark = control.mark()
    done = call_tool(
        oauth_peer.url,
        "request_approval",
        {"action": "ship"},
        input_responses=answers,
        request_state=state,
        headers=bearer(renewed),
    )
    assert done.status == 200
    result = done.result
    assert result["content"][0]["text"].startswith("ship: approved; ran as caller (grant ")
    assert result["structuredContent"]["asked_by"] == "caller"
    [resubmission] = control.calls("request_approval", since=mark)
    assert resubmission["resubmission"] is True
    assert resubmission["token"] == renewed["access_token"]
    assert resubmission["subject"] == "caller"


def test_a_reconnected_caller_can_still_resume_their_round(
    oauth_peer: Peer, client: Registered
) -> None:
    """A new grant for the same subject (the person reconnected) is the same principal."""
    control = OAuthControl.of(oauth_peer)
    before = connect(oauth_peer, client, subject="returning")
    first = call_tool(oauth_peer.url, "request_approval", {"action": "a"}, headers=bearer(before))
    control.revoke_refresh_tokens(subject="returning", access_tokens=True)
    after = connect(oauth_peer, client, subject="returning")
    done = call_tool(
        oauth_peer.url,
        "request_approval",
        {"action": "a"},
        input_responses={"approval": accept({"approve": False})},
        request_state=first.result["requestState"],
        headers=bearer(after),
    )
    assert done.status == 200
    assert done.result["structuredContent"]["status"] == "not approved"
    grants = {c["grant"] for c in control.calls("request_approval")[-2:]}
    assert len(grants) == 2


# --------------------------------------------------------------------------- CIMD, no DCR


@pytest.fixture
def metadata_document() -> Iterator[Callable[[dict[str, Any]], str]]:
    """Serve one client ID metadata document on loopback; returns its URL."""
    documents: dict[str, dict[str, Any]] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = json.dumps(documents.get(self.path, {})).encode()
            self.send_response(200 if self.path in documents else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()

    def serve(document: dict[str, Any]) -> str:
        path = f"/client-{len(documents)}.json"
        url = f"http://127.0.0.1:{server.server_address[1]}{path}"
        documents[path] = {k: (url if v == "SELF" else v) for k, v in document.items()}
        return url

    try:
        yield serve
    finally:
        server.shutdown()
        server.server_close()


def test_client_id_metadata_documents(
    peer_factory: Factory, metadata_document: Callable[[dict[str, Any]], str]
) -> None:
    peer = peer_factory("oauth_server", "--cimd", "--no-dcr")
    control = OAuthControl.of(peer)
    meta = httpx.get(f"{peer.base_url}/.well-known/oauth-authorization-server").json()
    assert meta["client_id_metadata_document_supported"] is True
    assert "registration_endpoint" not in meta
    assert httpx.post(f"{peer.base_url}/register", json={}).status_code in (404, 405)
    url = metadata_document(
        {"client_id": "SELF", "client_name": "mrtrweb", "redirect_uris": [REDIRECT_URI]}
    )
    client = Registered(url, None, "none")
    token = connect(peer, client, subject="doc-user")
    reply = call_tool(peer.url, "whoami", headers=bearer(token))
    assert reply.result["structuredContent"]["client_id"] == url
    assert control.cimd_fetches()[-1] == {**control.cimd_fetches()[-1], "accepted": True}
    # A document that names another client_id is refused, so nothing redirects back.
    liar = metadata_document({"client_id": "http://127.0.0.1:9/other", "redirect_uris": []})
    response = httpx.get(
        f"{peer.base_url}/authorize",
        params={
            "response_type": "code",
            "client_id": liar,
            "redirect_uri": REDIRECT_URI,
            "code_challenge": create_s256_code_challenge(generate_token(48)),
            "code_challenge_method": "S256",
        },
    )
    assert response.status_code == 400
    assert "does not match" in control.cimd_fetches()[-1]["error"]


def test_controls_answer_unknown_paths_with_404(oauth_peer: Peer) -> None:
    assert httpx.get(f"{oauth_peer.base_url}/_test/nothing").status_code == 404


# --------------------------------------------------------------------------- pre-registered


def test_preregistered_client_and_client_credentials(peer_factory: Factory) -> None:
    peer = peer_factory(
        "oauth_server",
        "--client",
        "ops:ops-sekret-1",
        "--client",
        "poster:poster-sekret-2:client_secret_post",
    )
    control = OAuthControl.of(peer)
    meta = httpx.get(f"{peer.base_url}/.well-known/oauth-authorization-server").json()
    assert "client_credentials" in meta["grant_types_supported"]
    # The code flow, with any loopback redirect URI (the app's port is chosen at run time).
    ops = Registered("ops", "ops-sekret-1", "client_secret_basic")
    token = connect(peer, ops, subject="operator")
    assert call_tool(peer.url, "whoami", headers=bearer(token)).status == 200
    elsewhere = httpx.get(
        f"{peer.base_url}/authorize",
        params={
            "response_type": "code",
            "client_id": "ops",
            "redirect_uri": "http://example.com/callback",
            "code_challenge": create_s256_code_challenge(generate_token(48)),
        },
    )
    assert elsewhere.status_code == 400
    # Client credentials: the client itself is the subject; no refresh token.
    for client in (ops, Registered("poster", "poster-sekret-2", "client_secret_post")):
        with oauth_client(peer, client) as oauth:
            machine = oauth.fetch_token(grant_type="client_credentials", resource=peer.url)
        assert "refresh_token" not in machine
        me = call_tool(peer.url, "whoami", headers=bearer(machine)).result["structuredContent"]
        assert me["subject"] == f"client:{client.client_id}"
        assert me["scopes"] == ["mcp:tools"]
    wrong = Registered("ops", "wrong", "client_secret_basic")
    with oauth_client(peer, wrong) as oauth, pytest.raises(AuthlibOAuthError) as refused:
        oauth.fetch_token(grant_type="client_credentials")
    assert refused.value.error == "invalid_client"
    # A dynamically registered client may not use client credentials.
    dynamic = register(peer, token_endpoint_auth_method="client_secret_basic")
    with oauth_client(peer, dynamic) as oauth, pytest.raises(AuthlibOAuthError) as refused:
        oauth.fetch_token(grant_type="client_credentials")
    assert refused.value.error == "unauthorized_client"
    assert [e["auth_method"] for e in control.log("token")][-4:] == [
        "client_secret_basic",
        "client_secret_post",
        "client_secret_basic",
        "client_secret_basic",
    ]
