"""Secrets at rest: encrypted with the configured keys, readable after a key rotation."""

from __future__ import annotations

import io
from typing import Any

import pytest
from cryptography.fernet import Fernet
from django.db import connection as db

from mrtrweb.servers import crypto
from mrtrweb.servers.models import Connection

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
    assert "tok-123" not in token and "k-9" not in headers
    fresh = Connection.objects.get(pk=conn.pk)
    assert fresh.bearer_token == "tok-123"
    assert fresh.headers == {"X-Key": "k-9"}
    assert fresh.client_settings().bearer_token == "tok-123"


def test_a_rotated_key_still_reads_old_values_and_rotate_rewrites_them(settings: Any) -> None:
    old = Fernet.generate_key().decode()
    settings.FERNET_KEYS = [old]
    conn = Connection.objects.create(name="r", url="http://127.0.0.1:1/mcp", bearer_token="t")
    token, _ = raw_columns(conn.pk)

    new = Fernet.generate_key().decode()
    settings.FERNET_KEYS = [new, old]
    assert Connection.objects.get(pk=conn.pk).bearer_token == "t"
    rotated = crypto.rotate(token)
    settings.FERNET_KEYS = [new]
    assert crypto.decrypt(rotated) == "t"
    with pytest.raises(crypto.SecretUnreadable):
        crypto.decrypt(token)


def test_rotate_secrets_moves_every_secret_to_the_newest_key(settings: Any) -> None:
    from django.core.management import call_command

    old = Fernet.generate_key().decode()
    settings.FERNET_KEYS = [old]
    conn = Connection.objects.create(
        name="k", url="http://127.0.0.1:1/mcp", bearer_token="t", headers={"A": "b"}
    )
    new = Fernet.generate_key().decode()
    settings.FERNET_KEYS = [new, old]
    out = io.StringIO()
    call_command("rotate_secrets", stdout=out)
    assert "1 connection(s)" in out.getvalue()
    settings.FERNET_KEYS = [new]
    fresh = Connection.objects.get(pk=conn.pk)
    assert (fresh.bearer_token, fresh.headers) == ("t", {"A": "b"})
