"""What the engine-side OAuth tests share: the peer (tests/authorizations/store_peer.py), a
connection to it, and a person's account "connected" as the browser flow would leave it."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from django.db.models import F

from mrtrweb.authorizations.models import Authorization, ClientRegistration
from mrtrweb.authorizations.signals import connected
from mrtrweb.servers.models import Connection
from tests.authorizations import store_peer
from tests.authorizations.store_peer import SCOPE, Authority, OAuthPeer
from tests.support.factories import make_connection


def serve_peer() -> Iterator[OAuthPeer]:
    """The body of a test module's ``oauth_peer`` fixture: a fresh peer for each test."""
    with store_peer.in_process(Authority()) as peer:
        yield peer


def oauth_connection(
    peer: OAuthPeer, auth: str = Connection.Auth.OAUTH_PERSON, **fields: Any
) -> Connection:
    return make_connection(peer, name=fields.pop("name", "guarded"), auth=auth, **fields)


def client_record(conn: Connection, peer: OAuthPeer) -> ClientRegistration:
    """mrtrweb's client at the peer's authorization server (as registration leaves it)."""
    record, _ = ClientRegistration.objects.get_or_create(
        connection=conn,
        issuer=peer.base_url,
        defaults={
            "client_id": store_peer.CLIENT_ID,
            "token_endpoint_auth_method": "none",
            "registered_via": ClientRegistration.Via.DYNAMIC,
        },
    )
    return record


def connect(
    conn: Connection,
    user: Any,
    peer: OAuthPeer,
    *,
    expires_in: float | None = None,
    scopes: tuple[str, ...] = (SCOPE,),
    signal: bool = False,
) -> Authorization:
    """``user`` (None: the connection's own account) connects: a new grant stored as the
    callback stores it, and ``connected`` sent when ``signal``."""
    subject = user.get_username() if user is not None else "shared"
    tokens = peer.authority.issue(subject, scopes, expires_in)
    expires_at = datetime.fromtimestamp(
        datetime.now(UTC).timestamp() + tokens["expires_in"], tz=UTC
    )
    fields = {
        "kind": Authorization.Kind.PERSON if user is not None else Authorization.Kind.SHARED,
        "client": client_record(conn, peer),
        "issuer": peer.base_url,
        "scopes": tokens["scope"],
        "access_token": tokens["access_token"],
        "refresh_token": tokens["refresh_token"],
        "expires_at": expires_at,
        "status": Authorization.Status.ACTIVE,
        "reason": "",
        "wanted_scopes": "",
    }
    rows = Authorization.objects.filter(connection=conn, user=user)
    if rows.update(**fields, version=F("version") + 1):
        authorization = rows.get()
    else:
        authorization = Authorization.objects.create(connection=conn, user=user, **fields)
    if signal:
        connected.send(sender=Authorization, connection=conn, user=user)
    return authorization
