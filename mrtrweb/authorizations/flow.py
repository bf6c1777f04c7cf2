"""The browser side of OAuth: discovery kept per connection, mrtrweb's client at each
authorization server, and the authorization code flow through a person's browser.

``begin`` makes an authorization request and remembers it (``PendingAuthorization``: only a
digest of ``state``, bound to the person and to a secret of their session, ten minutes);
``complete`` takes the callback, finds the request by the digest, refuses a foreign, replayed
or stale ``state``, lets ``mrtrweb.oauth.exchange_code`` check ``iss`` and trade the code, and
saves the tokens encrypted. The protocol is ``mrtrweb.oauth``; this module keeps its results.
Beside it: :mod:`.addresses` (mrtrweb's own URLs, where a person may be sent back to),
:mod:`.pending` (the rows bound to a person's session, drafts held while they connect),
:mod:`.client_credentials` (the connection's own token) and :mod:`.revoking` (disconnecting).

Every error a person may read is a :class:`FlowError` in words: never a token, a verifier or a
secret (server text may appear; templates escape it). A :class:`SetupFailed` is the server's
sign-in that could not be set up (discovery, mrtrweb's client, an unreachable endpoint): its
details (addresses, statuses, what came back) are for operators; everyone else reads
:data:`SETUP_FAILED` only, so the pages tell nobody what lies at an address a server named.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TypeVar
from urllib.parse import urlencode

import httpx
from django.contrib.auth.models import User
from django.db import transaction
from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone

from mrtrweb import oauth
from mrtrweb.http import SignedInRequest
from mrtrweb.mcp import io_loop
from mrtrweb.servers.models import Connection

from . import failures, store
from .addresses import CLIENT_NAME, callback_url, metadata_document_url, safe_return_to
from .models import Authorization, ClientRegistration, Discovery, PendingAuthorization
from .pending import HELD, PENDING_LIFETIME, digest, forget_expired, session_digest, take_draft
from .refresh import with_http
from .signals import connected

__all__ = [
    "SETUP_FAILED",
    "Completed",
    "FlowError",
    "SetupFailed",
    "begin",
    "client_for",
    "complete",
    "connect_url",
    "discovery_for",
    "has_active",
    "must_connect",
    "run_protocol",
    "save_tokens",
    "scopes_to_ask",
    "stored_discovery",
    "with_query",
]

T = TypeVar("T")

# A stored discovery is used as it is for this long; then it is done again (cheap, and the
# server may have moved to another authorization server).
DISCOVERY_FRESH = timedelta(minutes=10)


class FlowError(Exception):
    """A refusal or failure, in words fit for the person who caused it."""


class SetupFailed(FlowError):
    """The server's sign-in could not be set up; the message is the details, for operators."""


SETUP_FAILED = "This server's sign-in could not be set up; ask your operator."


def _setup_failed(connection: Connection, detail: str) -> SetupFailed:
    failures.remember(connection, detail)
    return SetupFailed(detail)


# -- running the protocol from a plain (sync) view ----------------------------------------


def run_protocol(connection: Connection, job: Callable[[httpx.AsyncClient], Awaitable[T]]) -> T:
    """Run ``job(http)`` on the process's shared loop, with a client made where every MCP
    client is (``refresh.with_http``: tests mount their in-process peers there)."""
    with io_loop.attached():
        return with_http(connection, job)


# -- discovery -------------------------------------------------------------------------


def stored_discovery(connection: Connection) -> tuple[Discovery | None, oauth.Discovery | None]:
    row = Discovery.objects.filter(connection=connection).first()
    if row is None:
        return None, None
    try:
        found = oauth.Discovery.from_json(row.document)
    except (KeyError, TypeError):
        return row, None
    return row, found


def discovery_for(
    connection: Connection, challenge: oauth.Challenge | None = None, *, refresh: bool = False
) -> oauth.Discovery:
    """The connection's discovery: the stored one while fresh, else discovered (and stored).

    A challenge (a 401's ``WWW-Authenticate``) always discovers again, from where it points.
    A failure less than ``failures.FAILURE_KEPT`` old is raised again without fetching,
    unless ``refresh`` (an operator's "Discover now").
    """
    row, stored = stored_discovery(connection)
    fresh = (
        row is not None
        and stored is not None
        and stored.server_url == connection.url
        and row.discovered_at > timezone.now() - DISCOVERY_FRESH
    )
    if fresh and not refresh and challenge is None and stored is not None:
        return stored
    failed = None if refresh else failures.recent(connection)
    if failed is not None:
        raise SetupFailed(failed)
    # Where the metadata was found last time, should the server not say it again.
    known_place = (
        stored.resource_metadata_url
        if stored is not None and stored.server_url == connection.url
        else None
    )

    async def job(http: httpx.AsyncClient) -> oauth.Discovery:
        nonlocal challenge
        if challenge is None:
            challenge = await _challenge_of(http, connection.url)
        if challenge is None and known_place:
            challenge = oauth.Challenge(status=401, resource_metadata=known_place)
        return await oauth.discover(http, connection.url, challenge)

    try:
        found = run_protocol(connection, job)
    except oauth.ResourceMismatch as exc:
        detail = f"{connection} cannot be connected: its metadata names another server. {exc}"
        raise _setup_failed(connection, detail) from exc
    except oauth.IssuerMismatch as exc:
        detail = (
            f"{connection} cannot be connected: its authorization server's identity does not "
            f"match. {exc}"
        )
        raise _setup_failed(connection, detail) from exc
    except oauth.OAuthError as exc:
        raise _setup_failed(connection, f"{connection}: OAuth discovery failed. {exc}") from exc
    store.save_discovery(connection, found)
    failures.forget(connection)
    return found


async def _challenge_of(http: httpx.AsyncClient, url: str) -> oauth.Challenge | None:
    """Ask the server once without credentials: its 401 says where its metadata is.

    The request is the cheapest MCP request there is; a server that answers it without a
    401 gives no challenge, and the well-known addresses are tried instead.
    """
    body = {"jsonrpc": "2.0", "id": 0, "method": "server/discover", "params": {}}
    headers = {"Accept": "application/json, text/event-stream"}
    try:
        response = await http.post(url, json=body, headers=headers)
    except httpx.HTTPError:
        return None
    await response.aclose()
    if response.status_code in (401, 403) and response.headers.get("www-authenticate"):
        return oauth.Challenge.parse(response.status_code, response.headers["www-authenticate"])
    return None


# -- mrtrweb's client at an authorization server ------------------------------------------


def _identity_of(row: ClientRegistration) -> oauth.ClientIdentity:
    return oauth.ClientIdentity(
        issuer=row.issuer,
        client_id=row.client_id,
        client_secret=row.client_secret or None,
        token_endpoint_auth_method=row.token_endpoint_auth_method,
        registered_via=row.registered_via,
    )


def _preregistered(connection: Connection) -> oauth.ClientIdentity | None:
    if not connection.oauth_client_id:
        return None
    return oauth.ClientIdentity(
        issuer="",
        client_id=connection.oauth_client_id,
        client_secret=connection.oauth_client_secret or None,
        token_endpoint_auth_method="",
        registered_via="pre-registered",
    )


def client_for(
    connection: Connection, discovery: oauth.Discovery
) -> tuple[ClientRegistration, oauth.ClientIdentity]:
    """mrtrweb's client at ``discovery.issuer`` for this connection, registered if need be.

    In the spec's order: the client ID metadata document when the server supports it, the
    operator's pre-registered credentials, else dynamic registration. Only a dynamic
    registration is kept and reused as it is (it costs a request and makes a record at the
    server); the others are decided again each time, so a change of settings takes effect.
    A record belongs to one issuer: another issuer finds none and registers anew.
    """
    row = ClientRegistration.objects.filter(connection=connection, issuer=discovery.issuer).first()
    supports_documents = (
        discovery.server_metadata.get("client_id_metadata_document_supported") is True
    )
    known = None
    if (
        row is not None
        and row.registered_via == ClientRegistration.Via.DYNAMIC
        and not supports_documents
        and not connection.oauth_client_id
    ):
        known = _identity_of(row)

    async def job(http: httpx.AsyncClient) -> oauth.ClientIdentity:
        return await oauth.identify(
            http,
            discovery,
            redirect_uri=callback_url(),
            client_name=CLIENT_NAME,
            metadata_document_url=metadata_document_url(),
            preregistered=_preregistered(connection),
            known=known,
        )

    if known is not None:
        return row, known  # type: ignore[return-value]
    try:
        identity = run_protocol(connection, job)
    except oauth.OAuthError as exc:
        detail = f"{connection}: mrtrweb could not identify itself. {exc}"
        raise _setup_failed(connection, detail) from exc
    return _save_identity(connection, identity), identity


def _save_identity(connection: Connection, identity: oauth.ClientIdentity) -> ClientRegistration:
    row, _ = ClientRegistration.objects.update_or_create(
        connection=connection,
        issuer=identity.issuer,
        defaults={
            "client_id": identity.client_id,
            "client_secret": identity.client_secret or "",
            "token_endpoint_auth_method": identity.token_endpoint_auth_method,
            "registered_via": identity.registered_via,
            "document": identity.to_json(),
        },
    )
    return row


# -- the authorization code flow ------------------------------------------------------------


def _owner_of(request: HttpRequest, kind: str) -> Any:
    """Whose authorization it becomes: the person's own, or (shared) the connection's."""
    return request.user if kind == Authorization.Kind.PERSON else None


def scopes_to_ask(
    connection: Connection, user: User | None, discovery: oauth.Discovery
) -> tuple[str, ...]:
    """The scopes a connect asks for: the server's, with what ``user`` (None: the
    connection's own) was granted and wanted before."""
    return oauth.choose_scopes(discovery, None, _scopes_before(connection, user))


def _scopes_before(connection: Connection, user: User | None) -> tuple[str, ...]:
    """What was granted (and wanted) before: a reconnect keeps asking for it."""
    existing = Authorization.objects.filter(connection=connection, user=user).first()
    if existing is None:
        return ()
    return tuple(existing.scope_list) + tuple(existing.wanted_scopes.split())


def begin(
    request: SignedInRequest,
    connection: Connection,
    kind: str,
    return_to: str,
    draft: Any = None,
    *,
    held: str | None = None,
) -> str:
    """Start an authorization request for ``request.user``; the URL to send them to.

    ``kind`` is ``Authorization.Kind.PERSON`` (their own account) or ``SHARED`` (the
    connection's, by an operator). ``draft`` (or what :func:`hold_draft` kept under ``held``)
    comes back from :func:`complete`.
    """
    if kind not in (Authorization.Kind.PERSON, Authorization.Kind.SHARED):
        raise ValueError(f"no browser flow for {kind!r}")
    discovery = discovery_for(connection)
    _registration, identity = client_for(connection, discovery)
    scopes = scopes_to_ask(connection, _owner_of(request, kind), discovery)
    try:
        auth_request = oauth.authorization_request(
            discovery, identity, redirect_uri=callback_url(), scopes=scopes
        )
    except oauth.OAuthError as exc:
        raise _setup_failed(connection, f"{connection} cannot be connected. {exc}") from exc
    if held:
        draft = take_draft(request, connection, held)
    forget_expired()
    PendingAuthorization.objects.create(
        state_digest=digest(auth_request.state),
        session_digest=session_digest(request),
        user=request.user,
        connection=connection,
        kind=kind,
        request=auth_request.to_json(),
        return_to=safe_return_to(request, return_to, ""),
        draft=draft,
        expires_at=timezone.now() + PENDING_LIFETIME,
    )
    return auth_request.url


@dataclass(frozen=True)
class Completed:
    authorization: Authorization
    return_to: str
    draft: Any


def complete(request: HttpRequest, params: Mapping[str, str]) -> Completed:
    """Finish the authorization request the callback ``params`` answer; the saved
    authorization, where the person goes next and what they had typed.

    Refuses (``FlowError``, nothing saved): no or unknown ``state`` (forged, or used already:
    the pending row is deleted before the code is traded), a ``state`` of another person or
    another session (left as it is: its owner may still finish), an expired one, a wrong
    ``iss``, an error answer, a refused code.
    """
    state = params.get("state") or ""
    if not state:
        raise FlowError("The answer from the authorization server carries no state: refused.")
    this_session = session_digest(request)
    now = timezone.now()
    with transaction.atomic():
        pending = (
            PendingAuthorization.objects.select_for_update()
            .select_related("connection")
            .filter(state_digest=digest(state))
            .exclude(kind=HELD)
            .first()
        )
        if pending is None:
            raise FlowError(
                "This answer from the authorization server belongs to no connection in "
                "progress: it was used already, or never started here. Nothing was saved."
            )
        if pending.user_id != request.user.pk or not hmac.compare_digest(
            pending.session_digest, this_session
        ):
            # Left in place: it belongs to someone else, who may still come back with it.
            raise FlowError(
                "This answer belongs to a connection started by someone else, or in another "
                "browser session. Nothing was saved; start connecting again from here."
            )
        pending.delete()  # single use, whatever happens next
    if pending.expires_at <= now:
        raise FlowError(
            "This connection attempt took too long and has expired. Nothing was saved; "
            "please connect again."
        )
    connection = pending.connection
    auth_request = oauth.AuthorizationRequest.from_json(pending.request)
    _row, stored = stored_discovery(connection)
    if stored is None or stored.issuer != auth_request.issuer:
        raise FlowError(
            f"{connection} changed its authorization server while you were away. Nothing "
            "was saved; please connect again."
        )
    registration = ClientRegistration.objects.filter(
        connection=connection, issuer=auth_request.issuer
    ).first()
    if registration is None:
        raise FlowError(f"mrtrweb's registration at {auth_request.issuer} is gone; connect again.")
    identity = _identity_of(registration)

    async def job(http: httpx.AsyncClient) -> oauth.TokenSet:
        return await oauth.exchange_code(http, stored, identity, auth_request, dict(params.items()))

    try:
        tokens = run_protocol(connection, job)
    except oauth.AuthorizationDenied as exc:
        if exc.error == "access_denied":
            raise FlowError(
                f"Access to {connection} was not granted at the authorization server. "
                "Nothing was saved."
            ) from exc
        raise FlowError(f"{connection} was not connected. {exc}") from exc
    except oauth.Unreachable as exc:
        # The token endpoint is an address the authorization server chose.
        raise SetupFailed(f"{connection} was not connected. {exc}") from exc
    except oauth.OAuthError as exc:
        raise FlowError(f"{connection} was not connected. {exc}") from exc
    owner = request.user if pending.kind == Authorization.Kind.PERSON else None
    authorization = save_tokens(
        connection, owner, pending.kind, registration, auth_request.issuer, tokens
    )
    return Completed(authorization, pending.return_to, pending.draft)


def save_tokens(
    connection: Connection,
    user: User | None,
    kind: str,
    registration: ClientRegistration | None,
    issuer: str,
    tokens: oauth.TokenSet,
    *,
    scopes: tuple[str, ...] = (),
) -> Authorization:
    """Store freshly granted tokens (``store.save_new``: a new version, active, no reason),
    and say so (``signals.connected``) once committed, for what waited on them."""
    with transaction.atomic():
        held = store.save_new(
            connection,
            user.pk if user is not None else None,
            kind,
            issuer,
            tokens,
            scopes=scopes,
            client=registration,
        )
        transaction.on_commit(
            lambda: connected.send(sender=Authorization, connection=connection, user=user)
        )
    return Authorization.objects.get(pk=held.pk)


# -- whether a person must connect -----------------------------------------------------------


def has_active(connection: Connection, user: User) -> bool:
    """Whether ``user`` holds a working authorization of their own on ``connection``."""
    return Authorization.objects.filter(
        connection=connection, user=user, status=Authorization.Status.ACTIVE
    ).exists()


def must_connect(connection: Connection, user: User, *, refused: bool = False) -> bool:
    """Whether ``user`` must connect their account before using ``connection``: it is OAuth
    per person, they hold no working authorization, and the server is known to want one
    (it was discovered, or it just ``refused`` them)."""
    if connection.auth != Connection.Auth.OAUTH_PERSON:
        return False
    # Whether the server wants an account first: most never asked, and then the person's
    # authorizations need not be read at all (one query on every start instead of two).
    if not (refused or Discovery.objects.filter(connection_id=connection.pk).exists()):
        return False
    return not has_active(connection, user)


def connect_url(connection: Connection, *, next_: str, held: str | None = None) -> str:
    """The "Connect your account" page, coming back to ``next_`` afterwards."""
    query = {"next": next_, **({"held": held} if held else {})}
    path = reverse("authorizations:connect", kwargs={"connection": connection.name})
    return f"{path}?{urlencode(query)}"


def with_query(path: str, **params: str) -> str:
    """``path`` with ``params`` added to its query string."""
    joiner = "&" if "?" in path else "?"
    return f"{path}{joiner}{urlencode(params)}"
