"""Secrets at rest: encrypted with the configured keys, readable after a key rotation, and
``rotate_secrets`` moves every encrypted field of every model to the newest key."""

from __future__ import annotations

import io
from datetime import timedelta
from typing import Any

import pytest
from cryptography.fernet import Fernet
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection as db
from django.utils import timezone

from mrtrweb.api.models import ApiToken
from mrtrweb.authorizations.models import Authorization, ClientRegistration, PendingAuthorization
from mrtrweb.calls.models import Call, Round
from mrtrweb.encryption import crypto
from mrtrweb.servers.models import Connection
from tests.dashboard.support import make_round

pytestmark = pytest.mark.django_db


def raw_columns(pk: int) -> tuple[str, str]:
    with db.cursor() as cursor:
        cursor.execute("SELECT bearer_token, headers FROM servers_connection WHERE id = %s", [pk])
        return cursor.fetchone()


def test_token_and_headers_are_stored_encrypted(settings: Any) -> None:
    conn = Connection.objects.create(
        name="s", url="http://127.0.0.1:1/mcp", bearer_token="tok-123", headers={"X-Key": "k-9"}
    )
    token, headers = raw_columns(conn.pk)
    # JSON's quotes never occur in a ciphertext's base64: a readable value brings its own.
    assert "tok-123" not in token and '"k-9"' not in headers
    fresh = Connection.objects.get(pk=conn.pk)
    assert fresh.bearer_token == "tok-123"
    assert fresh.headers == {"X-Key": "k-9"}
    assert fresh.client_settings().bearer_token == "tok-123"


def test_an_older_key_still_reads_until_it_is_removed(settings: Any) -> None:
    old = Fernet.generate_key().decode()
    settings.FERNET_KEYS = [old]
    conn = Connection.objects.create(name="r", url="http://127.0.0.1:1/mcp", bearer_token="t")
    token, _ = raw_columns(conn.pk)

    new = Fernet.generate_key().decode()
    settings.FERNET_KEYS = [new, old]
    assert Connection.objects.get(pk=conn.pk).bearer_token == "t"
    assert crypto.decrypt(token) == "t"
    settings.FERNET_KEYS = [new]
    with pytest.raises(crypto.SecretUnreadable):
        crypto.decrypt(token)
    with pytest.raises(crypto.SecretUnreadable):
        Connection.objects.get(pk=conn.pk)


def test_rotate_secrets_moves_every_secret_to_the_newest_key(settings: Any) -> None:
    old = Fernet.generate_key().decode()
    settings.FERNET_KEYS = [old]
    user = get_user_model().objects.create_user("ada", password="pw-ada-123")
    conn = Connection.objects.create(
        name="k", url="http://127.0.0.1:1/mcp", bearer_token="t", headers={"A": "b"}
    )
    round = make_round(connection=conn, starter=user, request_state="v1.state")
    Call.objects.filter(pk=round.call_id).update(credentials={"bearer_token": "c", "headers": {}})
    token, _ = ApiToken.issue(user, "ci")
    new = Fernet.generate_key().decode()
    settings.FERNET_KEYS = [new, old]
    out = io.StringIO()
    call_command("rotate_secrets", stdout=out)
    # Found through the app registry: every model with an encrypted field, nobody listed.
    for label in ("1 servers.Connection", "1 calls.Call", "1 calls.Round", "1 api.ApiToken"):
        assert label in out.getvalue()
    settings.FERNET_KEYS = [new]
    fresh = Connection.objects.get(pk=conn.pk)
    assert (fresh.bearer_token, fresh.headers) == ("t", {"A": "b"})
    assert Round.objects.get(pk=round.pk).request_state == "v1.state"
    assert Call.objects.get(pk=round.call_id).credentials["bearer_token"] == "c"
    assert ApiToken.objects.get(pk=token.pk).webhook_secret == token.webhook_secret


def test_oauth_tokens_and_client_secrets_are_encrypted_and_rotated(settings: Any) -> None:
    old = Fernet.generate_key().decode()
    settings.FERNET_KEYS = [old]
    user = get_user_model().objects.create_user("bo", password="pw-bo-12345")
    conn = Connection.objects.create(
        name="o",
        url="http://127.0.0.1:1/mcp",
        oauth_client_id="pre-1",
        oauth_client_secret="pre-secret-1",
        oauth_private_key="-----BEGIN PRIVATE KEY-----k1",
    )
    client = ClientRegistration.objects.create(
        connection=conn,
        issuer="http://127.0.0.1:2",
        client_id="cid",
        client_secret="client-secret-2",
        registered_via=ClientRegistration.Via.DYNAMIC,
    )
    authorization = Authorization.objects.create(
        connection=conn,
        user=user,
        kind=Authorization.Kind.PERSON,
        client=client,
        issuer=client.issuer,
        access_token="access-3",
        refresh_token="refresh-4",
    )
    pending = PendingAuthorization.objects.create(
        state_digest="d" * 64,
        session_digest="s" * 64,
        user=user,
        connection=conn,
        kind=Authorization.Kind.PERSON,
        request={"code_verifier": "verifier-5"},
        draft={"arg": "typed-6"},
        expires_at=timezone.now() + timedelta(minutes=5),
    )
    secrets = (
        "pre-secret-1",
        "BEGIN PRIVATE KEY",
        "client-secret-2",
        "access-3",
        "refresh-4",
        "verifier-5",
        "typed-6",
    )

    def raw_text() -> str:
        rows = []
        with db.cursor() as cursor:
            for table in (
                "servers_connection",
                "authorizations_clientregistration",
                "authorizations_authorization",
                "authorizations_pendingauthorization",
            ):
                cursor.execute(f"SELECT * FROM {table}")
                rows += [str(row) for row in cursor.fetchall()]
        return "\n".join(rows)

    assert not [s for s in secrets if s in raw_text()]
    new = Fernet.generate_key().decode()
    settings.FERNET_KEYS = [new, old]
    out = io.StringIO()
    call_command("rotate_secrets", stdout=out)
    for label in (
        "authorizations.ClientRegistration",
        "authorizations.Authorization",
        "authorizations.PendingAuthorization",
    ):
        assert label in out.getvalue()
    settings.FERNET_KEYS = [new]
    assert not [s for s in secrets if s in raw_text()]
    fresh = Authorization.objects.get(pk=authorization.pk)
    assert (fresh.access_token, fresh.refresh_token) == ("access-3", "refresh-4")
    assert ClientRegistration.objects.get(pk=client.pk).client_secret == "client-secret-2"
    assert PendingAuthorization.objects.get(pk=pending.pk).request["code_verifier"] == "verifier-5"
    assert Connection.objects.get(pk=conn.pk).oauth_client_secret == "pre-secret-1"
