"""Refreshing a token without ever losing the newer refresh token.

Authorization servers rotate refresh tokens (OAuth 2.1): each refresh returns a new one and
the old one dies, and a reused one is refused (some servers then revoke the whole grant). So
two processes must never both spend the same refresh token, and a process that lost the race
must use the winner's tokens rather than mark the person as disconnected.

- On a database with row locks (PostgreSQL) the refresh holds ``SELECT ... FOR UPDATE`` on the
  authorization while it asks the token endpoint: the second process waits, then sees that the
  version moved and uses the new tokens without a request of its own.
- Everywhere, the new tokens are stored by compare-and-swap on ``version`` (store.swap_tokens);
  without row locks (SQLite: one writer anyway, and a lock held over a network request would
  stop every other write) a process whose refresh was refused checks whether the version moved
  before it concludes that the grant is dead.

These functions are synchronous (they run database transactions); the async authenticator
reaches them through ``sync_to_async``, and they reach the token endpoint through
``async_to_sync``.
"""

from __future__ import annotations

import functools
import logging
import ssl
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

import httpx
from asgiref.sync import async_to_sync
from django.db import connection as db_connection
from django.db import transaction

from mrtrweb import netguard, oauth
from mrtrweb.mcp import io_loop
from mrtrweb.servers.models import Connection

from . import failures, store
from .models import Authorization
from .store import Held

__all__ = ["DEAD_GRANT_ERRORS", "Renewed", "discovery_for_connection", "refresh", "with_http"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

# Token endpoint errors after which only a new authorization helps (RFC 6749 §5.2).
DEAD_GRANT_ERRORS = frozenset({"invalid_grant", "invalid_client", "unauthorized_client"})
# Without row locks: how long a refused refresh waits for a concurrent winner's tokens to be
# stored before it concludes that the grant is dead (a token request takes well under this).
RACE_WAIT = 5.0


@dataclass(frozen=True)
class Renewed:
    """What a refresh left: the authorization as now stored, and whether this process
    asked the token endpoint (False: another one had already refreshed it)."""

    held: Held | None
    asked: bool = False

    @property
    def active(self) -> bool:
        return self.held is not None and self.held.active


@functools.cache
def _tls() -> ssl.SSLContext:
    return httpx.create_ssl_context()


def with_http(connection: Connection, job: Callable[[httpx.AsyncClient], Awaitable[T]]) -> T:
    """Run ``job`` with an HTTP client made the way MCP's are (tests mount peers there),
    held to the address rules: OAuth requests go where a server points (its metadata, its
    authorization server's endpoints), so only to public addresses, the connection's own
    origin and what its operator allowed (``Connection.oauth_allowed_hosts``); never
    redirected (``new_http`` follows none)."""
    allowance = netguard.Allowance.of(connection.url, connection.oauth_allowed_hosts)
    backend = netguard.AsyncGuardedBackend(
        allowance.rules(), trusts=allowance.trusts, label="OAuth request refused"
    )

    async def vet(request: httpx.Request) -> None:
        netguard.vet_url(request.url, allowance, request=request)

    async def run() -> T:
        async with io_loop.new_http(
            connect_timeout=connection.connect_timeout,
            read_timeout=connection.read_timeout,
            verify=_tls(),
            transport=netguard.async_transport(backend, verify=_tls()),
            on_request=vet,
        ) as http:
            return await job(http)

    # On the process's shared loop (a view or task thread has none of its own); a thread
    # that already runs under a loop (the engine's, an ASGI request's) keeps it.
    with io_loop.attached():
        return async_to_sync(run)()


def discovery_for_connection(
    connection: Connection, challenge: oauth.Challenge | None = None
) -> oauth.Discovery:
    """The connection's saved discovery, else discovered now (and saved)."""
    found = store.saved_discovery(connection)
    if found is not None:
        return found
    failed = failures.recent(connection)
    if failed is not None:
        raise oauth.DiscoveryError(failed)  # as the connect page does: not fetched again
    try:
        found = with_http(connection, lambda http: oauth.discover(http, connection.url, challenge))
    except oauth.OAuthError as exc:
        failures.remember(connection, f"{connection}: OAuth discovery failed. {exc}")
        raise
    store.save_discovery(connection, found)
    failures.forget(connection)
    return found


def _dead(reason: str, exc: Exception | None = None) -> str:
    # Words for people: the OAuth error code, never the server's raw body (it could echo a
    # token back).
    if isinstance(exc, oauth.TokenError) and exc.error:
        return f"{reason} (the authorization server answered {exc.error})."
    return f"{reason}."


def refresh(
    connection: Connection, before: Held, *, scopes: tuple[str, ...] = (), lock: bool | None = None
) -> Renewed:
    """Refresh the tokens ``before`` read. Another process's newer tokens count as renewed.

    A dead grant (refused refresh token, or none to refresh with) marks the authorization
    RECONNECT with a reason in words. A token endpoint that cannot be reached raises
    :class:`~mrtrweb.oauth.OAuthError`: nothing is marked, the person did nothing wrong.

    ``lock`` (default: where the database has row locks) holds the row while refreshing.
    """
    if lock is None:
        lock = bool(db_connection.features.has_select_for_update)
    if lock:
        with transaction.atomic():
            row = Authorization.objects.select_for_update().filter(pk=before.pk).first()
            if row is None:
                return Renewed(None)
            now = store.held_by_pk(row.pk)
            if now is None or now.version != before.version:
                return Renewed(now)  # refreshed (or marked) by another process meanwhile
            return _refresh(connection, now, scopes, locked=True)
    return _refresh(connection, before, scopes, locked=False)


def _moved_on(before: Held, *, wait: float) -> Held | None:
    """The authorization if another process changed it since ``before`` (within ``wait``
    seconds), else None. Without row locks a refresh refused as a reuse may have lost to one
    whose answer is still on its way to the database: it is given a moment to land."""
    deadline = time.monotonic() + wait
    while True:
        now = store.held_by_pk(before.pk)
        if now is None or now.version != before.version:
            return now
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.1)


def _refresh(
    connection: Connection, before: Held, scopes: tuple[str, ...], *, locked: bool
) -> Renewed:
    if not before.active:
        return Renewed(before)
    if not before.refresh_token:
        store.mark_reconnect(
            before, _dead("The access token expired and there is no refresh token")
        )
        return Renewed(store.held_by_pk(before.pk))
    row = Authorization.objects.get(pk=before.pk)
    discovery = discovery_for_connection(connection)
    identity = store.client_identity(connection, discovery, client_id=row.client_id)
    if identity is None:
        store.mark_reconnect(
            before, _dead("mrtrweb has no client record for the authorization server")
        )
        return Renewed(store.held_by_pk(before.pk))
    try:
        tokens = with_http(
            connection,
            lambda http: oauth.refresh(
                http, discovery, identity, before.refresh_token, scopes=scopes
            ),
        )
    except oauth.TokenError as exc:
        if exc.error not in DEAD_GRANT_ERRORS:
            raise
        # Another process may have refreshed first with the same refresh token: its tokens
        # are the good ones (the compare-and-swap path, without row locks; with them, nobody
        # else can have).
        now = _moved_on(before, wait=0.0 if locked else RACE_WAIT)
        if now is not None:
            return Renewed(now, asked=True)
        store.mark_reconnect(
            before, _dead("The authorization server refused to renew the token", exc)
        )
        logger.info(
            "authorization %s on connection %s: refresh refused (%s), reconnect needed",
            before.pk,
            connection.name,
            exc.error,
        )
        return Renewed(store.held_by_pk(before.pk), asked=True)
    if not store.swap_tokens(before, tokens, scopes=scopes):
        # Lost the race after all (possible only without row locks): the winner's tokens are
        # stored; these new ones are dropped, which the server allows (each is valid alone).
        return Renewed(store.held_by_pk(before.pk), asked=True)
    logger.info("authorization %s on connection %s: refreshed", before.pk, connection.name)
    return Renewed(store.held_by_pk(before.pk), asked=True)
