"""What each process of the refresh race runs (``manage.py shell -c``, tests/authorizations/
test_refresh_race.py): set up a person's authorization, refresh it when every racer is ready,
or show what is stored. Tokens are read from stdin and only ever printed as SHA-256 digests."""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from django.contrib.auth import get_user_model

from mrtrweb.authorizations import refresh, store
from mrtrweb.authorizations.models import Authorization, ClientRegistration
from mrtrweb.servers.models import Connection

CONNECTION = "raced"
USER = "ada"


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def setup(url: str, issuer: str, client_id: str) -> None:
    """The connection, Ada, and her authorization with the tokens on stdin (JSON)."""
    tokens = json.loads(sys.stdin.read())
    user = get_user_model().objects.create_user(USER, password="pw-ada-race-1")
    conn = Connection.objects.create(
        name=CONNECTION, title="Raced server", url=url, auth=Connection.Auth.OAUTH_PERSON
    )
    client = ClientRegistration.objects.create(
        connection=conn,
        issuer=issuer,
        client_id=client_id,
        token_endpoint_auth_method="none",
        registered_via=ClientRegistration.Via.DYNAMIC,
    )
    Authorization.objects.create(
        connection=conn,
        user=user,
        kind=Authorization.Kind.PERSON,
        client=client,
        issuer=issuer,
        scopes=tokens["scope"],
        access_token=tokens["access_token"],
        refresh_token=tokens["refresh_token"],
        # Expired already: whoever sends next must refresh first.
        expires_at=datetime.fromtimestamp(time.time() - 1, tz=UTC),
        version=1,
    )
    print(json.dumps({"ok": True}))


def race(gate: str, lock: bool) -> None:
    """Read the authorization, say so (a file in ``gate``), wait for the go (``gate/go``),
    refresh it: every racer holds the same version when they all start at once."""
    conn = Connection.objects.get(name=CONNECTION)
    user = get_user_model().objects.get(username=USER)
    before = store.held(conn.pk, user.pk)
    assert before is not None
    Path(gate, f"ready-{os.getpid()}").touch()
    deadline = time.monotonic() + 60
    while not Path(gate, "go").exists():
        assert time.monotonic() < deadline, "no go"
        time.sleep(0.001)
    renewed = refresh.refresh(conn, before, lock=lock)
    assert renewed.held is not None
    print(
        json.dumps(
            {
                "asked": renewed.asked,
                "status": renewed.held.status,
                "read_version": before.version,
                "version": renewed.held.version,
                "access": digest(renewed.held.access_token),
                "refresh": digest(renewed.held.refresh_token),
            }
        )
    )


def show() -> None:
    row = Authorization.objects.get(connection__name=CONNECTION, user__username=USER)
    print(
        json.dumps(
            {
                "status": row.status,
                "version": row.version,
                "reason": row.reason,
                "access": digest(row.access_token),
                "refresh": digest(row.refresh_token),
            }
        )
    )
