"""Reading and writing a connection's authorizations, so that no token is ever lost.

Every write of new tokens is a compare-and-swap on ``Authorization.version``: it lands only if
the row still holds the version its writer read, and moves the version on. A writer that lost
reads the row again and uses what the winner wrote (see :mod:`.refresh`).

Nothing here logs or returns a token in words: a :class:`Held` is what callers keep, and its
``repr`` leaves the tokens out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from mrtrweb import oauth
from mrtrweb.servers.models import Connection

from .models import Authorization, ClientRegistration, Discovery

__all__ = [
    "Held",
    "client_identity",
    "held",
    "held_by_pk",
    "kind_of",
    "mark_reconnect",
    "person_name",
    "save_discovery",
    "save_new",
    "saved_discovery",
    "swap_tokens",
    "who_must_reconnect",
]


@dataclass(frozen=True)
class Held:
    """One authorization as read: its version says which tokens these are."""

    pk: int
    version: int
    status: str
    kind: str
    scopes: tuple[str, ...]
    wanted_scopes: tuple[str, ...]
    expires_at: datetime | None
    reason: str
    token_type: str = field(repr=False)
    access_token: str = field(repr=False)
    refresh_token: str = field(repr=False)

    @property
    def active(self) -> bool:
        return self.status == Authorization.Status.ACTIVE

    def expires_within(self, seconds: float) -> bool:
        if self.expires_at is None:
            return False
        return (self.expires_at - timezone.now()).total_seconds() <= seconds

    def header(self) -> dict[str, str]:
        # Only bearer tokens are sent (DPoP is not offered); the scheme is case-insensitive,
        # and "Bearer" is how servers expect it.
        return {"Authorization": f"Bearer {self.access_token}"} if self.access_token else {}


def kind_of(connection: Connection) -> str | None:
    """Which authorization a connection's calls use, None when it uses none."""
    kinds: dict[str, str] = {
        Connection.Auth.OAUTH_PERSON: Authorization.Kind.PERSON,
        Connection.Auth.OAUTH_SHARED: Authorization.Kind.SHARED,
        Connection.Auth.CLIENT_CREDENTIALS: Authorization.Kind.CLIENT_CREDENTIALS,
    }
    return kinds.get(connection.auth)


def _rows(connection_id: int, user_id: int | None) -> Any:
    whose = {"user_id": user_id} if user_id is not None else {"user__isnull": True}
    return Authorization.objects.filter(connection_id=connection_id, **whose)


def _held(row: Authorization) -> Held:
    return Held(
        pk=row.pk,
        version=row.version,
        status=row.status,
        kind=row.kind,
        scopes=tuple(row.scopes.split()),
        wanted_scopes=tuple(row.wanted_scopes.split()),
        expires_at=row.expires_at,
        reason=row.reason,
        token_type=row.token_type,
        access_token=row.access_token,
        refresh_token=row.refresh_token,
    )


def held(connection_id: int, user_id: int | None) -> Held | None:
    """The authorization of ``user_id`` (None: the connection's own) as stored now."""
    # Read before every request of every call on a connection with OAuth (the default: per
    # person), most often to find nothing.
    # One row at most (the constraints: one per person, one of the connection's own), so no
    # ORDER BY for first() to build.
    row = next(iter(_rows(connection_id, user_id)[:1]), None)
    return _held(row) if row is not None else None


def held_by_pk(pk: int) -> Held | None:
    row = Authorization.objects.filter(pk=pk).first()
    return _held(row) if row is not None else None


def _expiry(tokens: oauth.TokenSet) -> datetime | None:
    return datetime.fromtimestamp(tokens.expires_at, tz=UTC) if tokens.expires_at else None


def _token_fields(tokens: oauth.TokenSet, *, keep_refresh_token: str) -> dict[str, Any]:
    now = timezone.now()
    fields: dict[str, Any] = {
        "access_token": tokens.access_token,
        # A refresh answer without a refresh token leaves the old one valid (RFC 6749 §6).
        "refresh_token": tokens.refresh_token or keep_refresh_token,
        "token_type": tokens.token_type or "Bearer",
        "expires_at": _expiry(tokens),
        "status": Authorization.Status.ACTIVE,
        "reason": "",
        "last_refresh_at": now,
        "updated_at": now,
    }
    if tokens.scope:
        fields["scopes"] = " ".join(tokens.scope)
    return fields


def swap_tokens(before: Held, tokens: oauth.TokenSet, *, scopes: tuple[str, ...] = ()) -> bool:
    """Store ``tokens`` in place of the ones ``before`` read, if nobody changed the row since
    (compare-and-swap on ``version``). True if they were stored."""
    fields = _token_fields(tokens, keep_refresh_token=before.refresh_token)
    if scopes and not tokens.scope:
        fields["scopes"] = " ".join(scopes)
    rows = Authorization.objects.filter(pk=before.pk, version=before.version)
    return bool(rows.update(**fields, version=F("version") + 1))


def save_new(
    connection: Connection,
    user_id: int | None,
    kind: str,
    issuer: str,
    tokens: oauth.TokenSet,
    *,
    scopes: tuple[str, ...] = (),
    client: ClientRegistration | None = None,
) -> Held:
    """Store a fresh grant (client credentials) as the connection's authorization, replacing
    whatever was there; returns it as stored."""
    fields = _token_fields(tokens, keep_refresh_token="")
    fields.pop("updated_at")
    if scopes and not tokens.scope:
        fields["scopes"] = " ".join(scopes)
    fields.update(kind=kind, issuer=issuer, client=client, wanted_scopes="")
    for _ in range(3):
        existing = _rows(connection.pk, user_id).first()
        if existing is not None:
            rows = Authorization.objects.filter(pk=existing.pk, version=existing.version)
            if rows.update(**fields, version=F("version") + 1, updated_at=timezone.now()):
                return _held(Authorization.objects.get(pk=existing.pk))
            continue  # another process wrote it meanwhile: write over its (equally fresh) one
        try:
            with transaction.atomic():
                row = Authorization.objects.create(
                    connection=connection, user_id=user_id, version=1, **fields
                )
            return _held(row)
        except IntegrityError:
            continue  # created by another process meanwhile
    raise RuntimeError("could not store the authorization: it kept changing")


def mark_reconnect(before: Held, reason: str, *, wanted_scopes: tuple[str, ...] = ()) -> bool:
    """Ask for a new connection: the tokens ``before`` read no longer work. Only if nobody
    changed the row since (a newer token another process stored wins). True if marked."""
    fields: dict[str, Any] = {
        "status": Authorization.Status.RECONNECT,
        "reason": reason[:500],
        "updated_at": timezone.now(),
    }
    if wanted_scopes:
        fields["wanted_scopes"] = " ".join(wanted_scopes)[:2000]
    rows = Authorization.objects.filter(pk=before.pk, version=before.version)
    return bool(rows.update(**fields, version=F("version") + 1))


# -- discovery and the client's identity -------------------------------------------------


def saved_discovery(connection: Connection) -> oauth.Discovery | None:
    row = Discovery.objects.filter(connection=connection).first()
    if row is None or not row.document:
        return None
    return oauth.Discovery.from_json(row.document)


def save_discovery(connection: Connection, discovery: oauth.Discovery) -> None:
    fields = {
        "resource": discovery.resource,
        "issuer": discovery.issuer,
        "document": discovery.to_json(),
        "discovered_at": timezone.now(),
    }
    try:
        with transaction.atomic():
            Discovery.objects.update_or_create(connection=connection, defaults=fields)
    except IntegrityError:
        # Another process discovered the same server at the same moment: either one serves.
        Discovery.objects.filter(connection=connection).update(**fields)


def client_identity(
    connection: Connection, discovery: oauth.Discovery, *, client_id: int | None = None
) -> oauth.ClientIdentity | None:
    """The client identity a refresh or a client-credentials grant presents at the issuer.

    An authorization's own client record first (the one its tokens were issued to), then the
    connection's record for this issuer, then the credentials an operator entered.
    """
    if connection.auth == Connection.Auth.CLIENT_CREDENTIALS and connection.oauth_client_id:
        # Machine to machine is the operator's client, whatever this connection registered
        # at the same issuer while it used another mode.
        return _operator_identity(connection, discovery)
    record = None
    if client_id is not None:
        record = ClientRegistration.objects.filter(pk=client_id).first()
    if record is None or record.issuer != discovery.issuer:
        record = ClientRegistration.objects.filter(
            connection=connection, issuer=discovery.issuer
        ).first()
    if record is not None:
        return oauth.ClientIdentity(
            issuer=record.issuer,
            client_id=record.client_id,
            client_secret=record.client_secret or None,
            token_endpoint_auth_method=record.token_endpoint_auth_method,
            registered_via=record.registered_via,
        )
    if not connection.oauth_client_id:
        return None
    return _operator_identity(connection, discovery)


def _operator_identity(connection: Connection, discovery: oauth.Discovery) -> oauth.ClientIdentity:
    return oauth.ClientIdentity(
        issuer=discovery.issuer,
        client_id=connection.oauth_client_id,
        client_secret=connection.oauth_client_secret or None,
        token_endpoint_auth_method=_auth_method(connection, discovery),
        registered_via=(
            ClientRegistration.Via.CLIENT_CREDENTIALS
            if connection.auth == Connection.Auth.CLIENT_CREDENTIALS
            else ClientRegistration.Via.PRE_REGISTERED
        ),
    )


def _auth_method(connection: Connection, discovery: oauth.Discovery) -> str:
    """How the operator's credentials authenticate at the token endpoint: a private key by
    ``private_key_jwt``; a secret by the first of basic and post the server offers."""
    offered = discovery.auth_methods
    if connection.oauth_private_key:
        return "private_key_jwt"
    if connection.oauth_client_secret:
        for method in offered:
            if method in ("client_secret_basic", "client_secret_post"):
                return method
        return "client_secret_basic"
    return "none"


# -- words for people ----------------------------------------------------------------------


def person_name(user: User | None) -> str:
    if user is None:
        return "an operator"
    return user.get_full_name() or user.get_username()


def who_must_reconnect(connection: Connection, user: User) -> str:
    """ "Ada Lovelace" for a person's own account, "an operator" for the connection's."""
    kind = kind_of(connection)
    return person_name(user if kind == Authorization.Kind.PERSON else None)
