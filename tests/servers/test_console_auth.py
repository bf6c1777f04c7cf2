"""The console's authentication settings: the mode, the OAuth client fields (secrets
write-only), and the rules that keep each mode with the settings it uses."""

from __future__ import annotations

import re
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from django.db import connection as db
from django.test import Client

from mrtrweb.servers.models import Connection
from tests.servers.test_console import form_data, url

pytestmark = pytest.mark.django_db

SECRET = "cs-Console-sekret-5e1d"


def private_key() -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()


def errors_of(response: Any) -> str:
    assert response.status_code == 422, response.status_code
    return response.content.decode()


def test_the_form_offers_every_mode_with_help(web: Client) -> None:
    body = web.get(url("create")).content.decode()
    for value, _ in Connection.Auth.choices:
        assert f'type="radio" name="auth" value="{value}"' in body
    assert "each person connects their own account" in body
    assert "/oauth/client-metadata.json" in body
    # OAuth per person is the default.
    default = re.search(r'<input type="radio" name="auth" value="oauth-person"[^>]*>', body)
    assert default is not None and "checked" in default.group(0)


def test_client_credentials_saved_with_the_secrets_encrypted(web: Client) -> None:
    pem = private_key()
    data = form_data(
        auth="client-credentials",
        oauth_client_id="machine-1",
        oauth_client_secret=SECRET,
        oauth_private_key=pem,
        oauth_scopes="  files:read   files:write ",
    )
    response = web.post(url("create"), data)
    assert response.status_code == 303
    conn = Connection.objects.get(name="peer")
    assert conn.auth == Connection.Auth.CLIENT_CREDENTIALS
    assert conn.oauth_client_id == "machine-1"
    assert conn.oauth_client_secret == SECRET
    assert conn.oauth_private_key == pem
    assert conn.oauth_scopes == "files:read files:write"
    with db.cursor() as cursor:
        cursor.execute(
            "SELECT oauth_client_secret, oauth_private_key FROM servers_connection WHERE id = %s",
            [conn.pk],
        )
        raw_secret, raw_key = cursor.fetchone()
    assert SECRET not in raw_secret and "PRIVATE KEY" not in raw_key

    page = web.get(url("edit", conn)).content.decode()
    assert SECRET not in page and "BEGIN PRIVATE KEY" not in page
    assert "A client secret is <strong>set</strong>" in page
    assert "A private key is <strong>set</strong>" in page
    assert "machine-1" in page  # the client ID is no secret


def test_empty_secret_fields_keep_and_remove_boxes_remove(web: Client) -> None:
    conn = Connection.objects.create(
        name="peer",
        url="http://127.0.0.1:1/mcp",
        auth="client-credentials",
        oauth_client_id="machine-1",
        oauth_client_secret=SECRET,
        oauth_private_key=private_key(),
    )
    base = form_data(auth="client-credentials", oauth_client_id="machine-1")
    assert web.post(url("edit", conn), base).status_code == 303
    conn.refresh_from_db()
    assert conn.oauth_client_secret == SECRET and conn.oauth_private_key

    response = web.post(url("edit", conn), {**base, "clear_private_key": "on"})
    assert response.status_code == 303
    conn.refresh_from_db()
    assert conn.oauth_private_key == "" and conn.oauth_client_secret == SECRET

    # Removing the last way to authenticate the client is refused.
    body = errors_of(web.post(url("edit", conn), {**base, "clear_client_secret": "on"}))
    assert "need the client secret or a private key" in body
    conn.refresh_from_db()
    assert conn.oauth_client_secret == SECRET


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"auth": "oauth-person", "bearer_token": "tok-1"}, "only sent with"),
        ({"auth": "none", "bearer_token": "tok-1"}, "only sent with"),
        ({"auth": "header"}, "Enter the token (or a custom header) to send."),
        ({"auth": "client-credentials", "oauth_client_secret": SECRET}, "need the client ID"),
        ({"auth": "client-credentials", "oauth_client_id": "m"}, "client secret or a private key"),
        ({"auth": "none", "oauth_client_id": "m"}, "only used with OAuth"),
        ({"auth": "header", "bearer_token": "t", "oauth_client_secret": "s"}, "only used with"),
        ({"auth": "oauth-person", "oauth_client_secret": SECRET}, "goes with its client ID"),
        ({"auth": "oauth-shared", "oauth_private_key": "KEY"}, "not an unencrypted PEM"),
        ({"auth": "bogus"}, "Select a valid choice"),
    ],
)
def test_validation(web: Client, fields: dict[str, str], message: str) -> None:
    body = errors_of(web.post(url("create"), form_data(**fields)))
    assert message in body
    assert SECRET not in body
    assert not Connection.objects.exists()


def test_a_valid_private_key_only_with_client_credentials(web: Client) -> None:
    body = errors_of(
        web.post(url("create"), form_data(auth="oauth-person", oauth_private_key=private_key()))
    )
    assert "A private key is only used with client credentials." in body
    assert "BEGIN PRIVATE KEY" not in body


@pytest.mark.parametrize("auth", ["none", "oauth-person", "oauth-shared"])
def test_modes_without_secrets_save(web: Client, auth: str) -> None:
    assert web.post(url("create"), form_data(auth=auth)).status_code == 303
    assert Connection.objects.get().auth == auth


def test_header_mode_with_a_token(web: Client) -> None:
    response = web.post(url("create"), form_data(auth="header", bearer_token="tok-123"))
    assert response.status_code == 303
    conn = Connection.objects.get()
    assert conn.auth == "header" and conn.bearer_token == "tok-123"


def test_pre_registered_client_for_people(web: Client) -> None:
    data = form_data(auth="oauth-person", oauth_client_id="app-1", oauth_client_secret=SECRET)
    assert web.post(url("create"), data).status_code == 303
    conn = Connection.objects.get()
    assert (conn.oauth_client_id, conn.oauth_client_secret) == ("app-1", SECRET)


def test_the_log_names_secret_changes_not_values(web: Client, caplog: Any) -> None:
    caplog.set_level("INFO", logger="mrtrweb.servers.views")
    data = form_data(
        auth="client-credentials", oauth_client_id="machine-1", oauth_client_secret=SECRET
    )
    web.post(url("create"), data)
    line = next(r.getMessage() for r in caplog.records if "created connection" in r.getMessage())
    assert "client secret set" in line
    assert SECRET not in line


def test_the_edit_page_links_the_oauth_page(web: Client) -> None:
    conn = Connection.objects.create(name="peer", url="http://127.0.0.1:1/mcp")
    body = web.get(url("edit", conn)).content.decode()
    assert 'href="/oauth/connections/peer/"' in body


def test_the_list_says_how_each_connection_authenticates(web: Client) -> None:
    Connection.objects.create(name="open", url="http://127.0.0.1:1/mcp", auth="none")
    Connection.objects.create(name="people", url="http://127.0.0.1:1/mcp", auth="oauth-person")
    body = web.get(url("list")).content.decode()
    assert "<td>none</td>" in body
    assert '<a href="/oauth/connections/people/">OAuth, per person</a>' in body
