"""Servers through the API: what a person may use, and operators' create/update/test, with
secrets write-only."""

from __future__ import annotations

from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from mrtrweb.servers.models import Connection
from tests.api.support import Api, pointers, problem, start

pytestmark = pytest.mark.django_db


SECRET = "s3cret-token-value"
HEADER_SECRET = "header-secret-value"


def test_end_users_see_only_exposed_tools(peer_conn: Any, ann_api: Api, op_api: Api) -> None:
    from mrtrweb.servers.catalog import refresh_catalog

    refresh_catalog(peer_conn)
    (server,) = ann_api.get("/servers").json()["servers"]
    assert server["name"] == "peer"
    assert sorted(t["name"] for t in server["tools"]) == ["approve_deploy", "echo", "url_login"]
    assert server["tools"][0]["inputSchema"]["type"] == "object"
    assert server["prompts"] == [] and server["resources"] == []
    everything = op_api.get("/servers").json()["servers"][0]
    assert "add" in {t["name"] for t in everything["tools"]}
    assert everything["prompts"] and everything["resources"]


def test_a_disabled_server_is_not_listed(peer_conn: Any, ann_api: Api) -> None:
    Connection.objects.filter(pk=peer_conn.pk).update(enabled=False)
    assert ann_api.get("/servers").json()["servers"] == []


def test_end_users_are_not_offered_a_server_that_never_passed_a_test(
    peer_conn: Any, ann_api: Api, op_api: Api
) -> None:
    from mrtrweb.servers.catalog import refresh_catalog

    refresh_catalog(peer_conn)  # listed, so tested and passing
    assert [s["name"] for s in ann_api.get("/servers").json()["servers"]] == ["peer"]
    for untested in ({"tested_at": None}, {"test_failure": "Could not reach the server."}):
        Connection.objects.filter(pk=peer_conn.pk).update(**untested)
        assert ann_api.get("/servers").json()["servers"] == []
        refused = start(ann_api)
        assert refused.status_code == 422, refused.content
        assert problem(refused)["errors"][0]["detail"] == (
            "This server is not ready yet: an operator has to test it first."
        )
        # Operators still see it, to test and fix it.
        assert [s["name"] for s in op_api.get("/servers").json()["servers"]] == ["peer"]
        Connection.objects.filter(pk=peer_conn.pk).update(
            tested_at=peer_conn.tested_at, test_failure=""
        )


def test_an_operator_creates_updates_and_tests_a_server_and_never_sees_its_secrets(
    op_api: Api, fastmcp_peer: Any
) -> None:
    created = op_api.post(
        "/servers",
        {
            "name": "made",
            "url": fastmcp_peer.url,
            "bearerToken": SECRET,
            "headers": {"X-Api-Key": HEADER_SECRET},
            "stateLifetimeMinutes": 5,
        },
    )
    assert created.status_code == 201, created.content
    body = created.content.decode()
    assert SECRET not in body and HEADER_SECRET not in body
    made = created.json()
    assert made["tokenSet"] is True and made["headerNames"] == ["X-Api-Key"]
    assert made["stateLifetimeMinutes"] == 5 and made["routing"] == "caller"
    stored = Connection.objects.get(name="made")
    assert stored.bearer_token == SECRET and stored.headers == {"X-Api-Key": HEADER_SECRET}

    changed = op_api.patch("/servers/made", {"title": "Made", "bearerToken": None})
    assert changed.status_code == 200, changed.content
    assert changed.json()["title"] == "Made" and changed.json()["tokenSet"] is False
    stored.refresh_from_db()
    assert stored.bearer_token == "" and stored.headers == {"X-Api-Key": HEADER_SECRET}
    assert stored.url == fastmcp_peer.url

    shown = op_api.get("/servers/made")
    assert shown.status_code == 200 and HEADER_SECRET not in shown.content.decode()

    tested = op_api.post("/servers/made/test")
    assert tested.status_code == 200, tested.content
    assert tested.json()["ok"] is True
    assert tested.json()["serverName"] == "mrtrweb-fastmcp-peer"
    assert tested.json()["counts"]["tools"] > 0


def test_a_failing_test_says_why(op_api: Api) -> None:
    op_api.post("/servers", {"name": "down", "url": "http://127.0.0.1:9/mcp"})
    tested = op_api.post("/servers/down/test").json()
    assert tested["ok"] is False and tested["kind"] == "unreachable" and tested["explanation"]


@pytest.mark.parametrize(
    ("body", "where"),
    [
        ({"name": "x", "url": "ftp://example.test/"}, "/url"),
        ({"name": "x", "url": "https://user:pw@example.test/"}, "/url"),
        ({"name": "bad name", "url": "https://example.test/"}, "/name"),
        ({"name": "x", "url": "https://example.test/", "routing": "group"}, "/routeGroup"),
        ({"name": "x", "url": "https://example.test/", "routeGroup": "nobody"}, "/routeGroup"),
        ({"name": "x", "url": "https://example.test/", "maxRounds": 0}, "/maxRounds"),
        ({"name": "x", "url": "https://example.test/", "headers": {"A": "b\nC: d"}}, "/headers/A"),
        ({"name": "x", "url": "https://example.test/", "token": "x"}, "/token"),
    ],
)
def test_invalid_server_settings_are_a_422_naming_the_field(
    op_api: Api, body: dict[str, Any], where: str
) -> None:
    response = op_api.post("/servers", body)
    assert response.status_code == 422, response.content
    assert where in pointers(response)
    assert not Connection.objects.exists()


def test_only_operators_manage_servers(peer_conn: Any, ann_api: Api, op_api: Api) -> None:
    for response in (
        ann_api.post("/servers", {"name": "x", "url": "https://example.test/"}),
        ann_api.patch("/servers/peer", {"title": "mine"}),
        ann_api.get("/servers/peer"),
        ann_api.post("/servers/peer/test"),
    ):
        assert response.status_code == 403
        problem(response)
    assert Connection.objects.get().title == "peer server"
    assert op_api.get("/servers/nope").status_code == 404
    assert op_api.patch("/servers/nope", {"title": "x"}).status_code == 404


def test_an_operator_sets_oauth_client_credentials_and_never_sees_the_secrets(
    op_api: Api,
) -> None:
    pem = (
        ec.generate_private_key(ec.SECP256R1())
        .private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        .decode()
    )
    key_body = pem.splitlines()[1]
    created = op_api.post(
        "/servers",
        {
            "name": "machine",
            "url": "http://127.0.0.1:9/mcp",
            "auth": "client-credentials",
            "oauthClientId": "ci-client",
            "oauthClientSecret": "client-pass-api",
            "oauthPrivateKey": pem,
            "oauthScopes": "mcp:read  mcp:write",
        },
    )
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["auth"] == "client-credentials"
    assert body["oauthClientId"] == "ci-client"
    assert body["oauthClientSecretSet"] is True and body["oauthPrivateKeySet"] is True
    assert body["oauthScopes"] == "mcp:read mcp:write"
    assert "client-pass-api" not in created.content.decode()
    assert key_body not in created.content.decode()
    conn = Connection.objects.get(name="machine")
    assert conn.oauth_client_secret == "client-pass-api"
    assert conn.oauth_private_key.strip() == pem.strip()

    # null removes a secret; omitted keeps it.
    changed = op_api.patch("/servers/machine", {"oauthPrivateKey": None})
    assert changed.status_code == 200, changed.content
    assert changed.json()["oauthPrivateKeySet"] is False
    assert changed.json()["oauthClientSecretSet"] is True
    assert Connection.objects.get(name="machine").oauth_private_key == ""


def test_oauth_settings_that_do_not_fit_the_mode_are_a_422_naming_them(op_api: Api) -> None:
    needs_id = op_api.post(
        "/servers",
        {"name": "m1", "url": "http://127.0.0.1:9/mcp", "auth": "client-credentials"},
    )
    assert needs_id.status_code == 422
    assert "/oauthClientId" in pointers(needs_id)
    token_with_oauth = op_api.post(
        "/servers",
        {
            "name": "m2",
            "url": "http://127.0.0.1:9/mcp",
            "auth": "oauth-person",
            "bearerToken": SECRET,
        },
    )
    assert token_with_oauth.status_code == 422
    assert "/bearerToken" in pointers(token_with_oauth)
    assert SECRET not in token_with_oauth.content.decode()
    unknown = op_api.post(
        "/servers", {"name": "m3", "url": "http://127.0.0.1:9/mcp", "auth": "magic"}
    )
    assert unknown.status_code == 422
    assert not Connection.objects.filter(name__in=["m1", "m2", "m3"]).exists()
