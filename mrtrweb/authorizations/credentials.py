"""The credentials a call is sent with: the caller's own account, or the connection's.

:func:`authenticator_for` gives the MCP client (``ConnectionSettings.authenticator``) a
:class:`DatabaseAuthenticator` for a connection that uses OAuth:

- **per person**: the authorization of the person who started the call, whoever answered
  its rounds (servers bind a round's state to the caller's identity);
- **shared** and **client credentials**: the connection's own authorization.

Before each request it reads the authorization as stored now (another process may have
refreshed it), renews a token that expires within :data:`REFRESH_AHEAD` seconds, and sends it.
When the server refuses (401), it refreshes once; when the grant is dead, or a server wants
scopes only the person can grant (403 ``insufficient_scope``), it marks the authorization
RECONNECT and gives up, and the engine parks the request until the account is connected again
(``reason`` says who must do what). Client credentials need no person: a new token is fetched,
with more scopes when asked.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping

from asgiref.sync import sync_to_async
from django.contrib.auth.models import User

from mrtrweb import oauth
from mrtrweb.mcp import AuthorizationRequired, NotDelivered
from mrtrweb.servers.models import Connection

from . import refresh, store
from .models import Authorization
from .store import Held

__all__ = ["REFRESH_AHEAD", "DatabaseAuthenticator", "authenticator_for"]

# A token this close to its expiry is renewed before it is sent: it could expire on the way,
# or while a long tool runs and the server checks it again.
REFRESH_AHEAD = 60.0


def authenticator_for(connection: Connection, user: User) -> DatabaseAuthenticator | None:
    """The authenticator of ``user``'s calls on ``connection``; None when the connection uses
    no OAuth (no credentials, or a static header: the call's own snapshot of them)."""
    if store.kind_of(connection) is None:
        return None
    return DatabaseAuthenticator(connection, user)


def _union(*groups: tuple[str, ...]) -> tuple[str, ...]:
    """Every scope of ``groups`` once, in first-seen order (a step-up adds, never trades)."""
    return tuple(dict.fromkeys(scope for group in groups for scope in group))


class DatabaseAuthenticator:
    """``mrtrweb.mcp.Authenticator`` backed by ``authorizations.Authorization`` rows.

    Make it where the database may be used (a view, a task, the engine's thread): the user
    and connection are read then. ``reason`` is set once a person must connect (or
    reconnect): the engine's words for the wait.
    """

    def __init__(self, connection: Connection, user: User) -> None:
        self.connection = connection
        self.kind = store.kind_of(connection)
        self.user = user if self.kind == Authorization.Kind.PERSON else None
        self.who = store.who_must_reconnect(connection, user)
        # The authorization whose token went with the last request (None: none was sent).
        self._sent: Held | None = None
        # What :meth:`primed` read on the caller's thread, for the next :meth:`headers`: the
        # headers, or the exception reading them raised.
        self._primed: tuple[Mapping[str, str] | None, BaseException | None] | None = None
        self.reason = ""

    def __repr__(self) -> str:
        return f"<DatabaseAuthenticator {self.kind} on {self.connection.name}>"

    @property
    def _user_id(self) -> int | None:
        return self.user.pk if self.user is not None else None

    @property
    def needs_a_person(self) -> bool:
        """Whether a refusal can be cured by someone connecting an account (not so for client
        credentials: the operator must fix the connection's credentials)."""
        return self.kind != Authorization.Kind.CLIENT_CREDENTIALS

    # -- the Protocol (async; the database work runs on the caller's thread) -------------

    async def headers(self) -> Mapping[str, str]:
        primed, self._primed = self._primed, None
        if primed is None:
            return await sync_to_async(self.headers_now)()
        headers, failure = primed
        if failure is not None:
            raise failure
        assert headers is not None
        return headers

    @contextlib.contextmanager
    def primed(self) -> Iterator[None]:
        """Read the headers now, on the caller's thread, for the first :meth:`headers` asked
        inside (a request's first send).

        Why: the engine sends from a thread blocked in ``async_to_sync`` on the shared event
        loop, and :meth:`headers` would hop back to that very thread to read the database
        (``sync_to_async``) and back to the loop again: two thread switches a request for a
        read that can as well be made a moment earlier, on the thread that waits anyway. A
        failure is kept and raised where :meth:`headers` would have raised it. Whatever is
        not used by the end of the block is forgotten (never sent with a later request)."""
        try:
            self._primed = (self.headers_now(), None)
        except Exception as exc:
            self._primed = (None, exc)
        try:
            yield
        finally:
            self._primed = None

    async def challenged(self, http_status: int, www_authenticate: str | None) -> bool:
        return await sync_to_async(self.challenged_now)(http_status, www_authenticate)

    # -- the same, synchronous ------------------------------------------------------------

    def headers_now(self) -> dict[str, str]:
        current = store.held(self.connection.pk, self._user_id)
        if self.kind == Authorization.Kind.CLIENT_CREDENTIALS:
            if current is None or not current.active or current.expires_within(REFRESH_AHEAD):
                previous = current.scopes if current is not None else ()
                current = self._fetch(previous)
        elif current is None:
            # Not connected yet: a server that never asks needs nothing; one that answers
            # 401 makes challenged() ask the person to connect.
            self._sent = None
            return {}
        elif not current.active:
            self._require(current.reason)
        elif current.expires_within(REFRESH_AHEAD):
            current = self._renew(current, expired=current.expires_within(0))
        self._sent = current
        return current.header()

    def challenged_now(self, http_status: int, www_authenticate: str | None) -> bool:
        challenge = oauth.Challenge.parse(http_status, www_authenticate)
        sent = self._sent
        if self.kind == Authorization.Kind.CLIENT_CREDENTIALS:
            previous = sent.scopes if sent is not None else ()
            if challenge.insufficient_scope:
                previous = _union(previous, challenge.scope)
            self._fetch(previous, challenge)
            return True
        if sent is None:
            self.reason = self._words("has not connected", "yet")
            return False
        if challenge.insufficient_scope:
            # More scopes need the person's consent: nothing here can grant them.
            wanted = _union(sent.scopes, sent.wanted_scopes, challenge.scope)
            reason = f"The server needs more access ({' '.join(challenge.scope) or 'more scopes'})"
            store.mark_reconnect(sent, reason + ".", wanted_scopes=wanted)
            self.reason = self._words("must reconnect", f"to grant it more access: {reason}")
            return False
        current = store.held(self.connection.pk, self._user_id)
        if current is not None and current.version != sent.version and current.active:
            return True  # another process renewed it since: send the newer token
        try:
            self._renew(sent, expired=True)
        except AuthorizationRequired:
            return False  # the grant is dead: ``reason`` says who must reconnect
        return True

    # -- what the engine asks after the client gave up ---------------------------------------

    def refused(self, exc: AuthorizationRequired) -> str:
        """Why the request waits for a person, in words; "" when no person can help (client
        credentials, or a 403 that is not about scopes). A token refused right after it was
        renewed is marked RECONNECT here: only a new connection can help then."""
        if self.reason or not self.needs_a_person:
            return self.reason
        sent = self._sent
        if exc.http_status == 401 and sent is not None:
            store.mark_reconnect(sent, "The server refused the token even after it was renewed.")
            self.reason = self._words("must reconnect", "(the server refused the token)")
        return self.reason

    def connected_now(self) -> bool:
        """Whether the account works again already. Asked once a wait is recorded: every
        wait starts from an authorization that is missing or marked RECONNECT, so an active
        one means it was connected meanwhile (its ``connected`` signal found nothing waiting
        yet, and must not be missed)."""
        current = store.held(self.connection.pk, self._user_id)
        return current is not None and current.active

    # -- helpers ---------------------------------------------------------------------------

    def _words(self, what: str, why: str) -> str:
        server = str(self.connection)
        account = "their account" if self.user is not None else "the connection's account"
        return f"{self.who} {what} {account} on {server} {why}".strip()

    def _require(self, reason: str) -> None:
        self.reason = self._words("must reconnect", f"({reason.rstrip('.')})" if reason else "")
        raise AuthorizationRequired(self.reason)

    def _renew(self, current: Held, *, expired: bool) -> Held:
        """Refresh ``current``; a token endpoint that cannot be reached is waited out with the
        old token while it lasts, and as a delivery that did not go out after that."""
        try:
            renewed = refresh.refresh(self.connection, current)
        except oauth.OAuthError as exc:
            if not expired:
                return current
            raise NotDelivered(
                f"The access token for {self.connection} could not be renewed: "
                f"{type(exc).__name__} at the authorization server."
            ) from exc
        if renewed.held is None:
            self._sent = None
            self.reason = self._words("must connect", "again (the account was disconnected)")
            raise AuthorizationRequired(self.reason)
        if not renewed.active:
            self._require(renewed.held.reason)
        self._sent = renewed.held
        return renewed.held

    def _fetch(self, previous: tuple[str, ...], challenge: oauth.Challenge | None = None) -> Held:
        """A new client-credentials token (no person involved), stored as the connection's."""
        connection = self.connection
        try:
            discovery = refresh.discovery_for_connection(connection, challenge)
            identity = store.client_identity(connection, discovery)
            if identity is None:
                raise AuthorizationRequired(
                    f"{connection} uses client credentials but has no client ID: an operator "
                    "must enter one."
                )
            scopes = previous or tuple(connection.oauth_scopes.split())
            if not scopes:
                # No refresh token comes with client credentials: offline_access is moot.
                chosen = oauth.choose_scopes(discovery, challenge, ())
                scopes = tuple(scope for scope in chosen if scope != "offline_access")
            private_key = connection.oauth_private_key or None
            tokens = refresh.with_http(
                connection,
                lambda http: oauth.client_credentials(
                    http, discovery, identity, scopes=scopes, private_key_pem=private_key
                ),
            )
        except oauth.TokenError as exc:
            raise AuthorizationRequired(
                f"The authorization server refused {connection}'s client credentials"
                + (f" ({exc.error})." if exc.error else ".")
            ) from exc
        except oauth.OAuthError as exc:
            raise NotDelivered(
                f"No token for {connection}: {type(exc).__name__} at the authorization server."
            ) from exc
        self._sent = store.save_new(
            connection,
            None,
            Authorization.Kind.CLIENT_CREDENTIALS,
            discovery.issuer,
            tokens,
            scopes=scopes,
        )
        return self._sent
