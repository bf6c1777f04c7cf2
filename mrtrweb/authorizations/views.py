"""The OAuth pages: connect an account, the callback, disconnect, the connected accounts, the
operators' OAuth panel of a connection, and mrtrweb's client ID metadata document.

Thin: the flow is ``flow.py``. No page shows a token, a verifier or a client secret; what a
server sent (its metadata, its error text) is shown escaped, as every template does.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import urlsplit

from csp.decorators import csp_update
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils.translation import gettext_lazy as _
from django.views.decorators.cache import cache_control
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from mrtrweb import oauth
from mrtrweb.http import SeeOther, SignedInRequest
from mrtrweb.people.roles import is_admin, is_operator
from mrtrweb.servers.exposure import startable_connections
from mrtrweb.servers.models import Connection

from . import addresses, client_credentials, flow, pending, revoking
from .models import Authorization, ClientRegistration, Discovery

logger = logging.getLogger(__name__)


class _AuthorizationServerRedirect(HttpResponseRedirect):
    """303 to the authorization server: another site, where the person signs in."""

    status_code = 303


def _kind_for(connection: Connection) -> str:
    """Which authorization the browser flow makes on this connection."""
    if connection.auth == Connection.Auth.OAUTH_SHARED:
        return Authorization.Kind.SHARED
    if connection.auth == Connection.Auth.OAUTH_PERSON:
        return Authorization.Kind.PERSON
    raise Http404(_("This connection is not connected through a browser."))


def _connectable(request: SignedInRequest, name: str) -> tuple[Connection, str]:
    """The connection and the kind of authorization ``request.user`` may make on it.

    A person connects their own account on a connection they may start calls on; the shared
    account of a connection is connected by an operator.
    """
    connection = get_object_or_404(Connection, name=name)
    kind = _kind_for(connection)
    if kind == Authorization.Kind.SHARED:
        if not is_operator(request.user):
            raise PermissionDenied(_("Only an operator connects a connection's shared account."))
    elif not startable_connections(request.user).filter(pk=connection.pk).exists():
        raise Http404(_("No such connection."))
    return connection, kind


def _shown(request: HttpRequest, exc: flow.FlowError) -> str:
    """What ``request.user`` reads of a failure: the details of a sign-in that could not be
    set up only for operators and admins (they name addresses a server chose and what came
    back from them); everyone else the one plain sentence, whatever went wrong."""
    if isinstance(exc, flow.SetupFailed) and not (
        is_operator(request.user) or is_admin(request.user)
    ):
        return flow.SETUP_FAILED
    return str(exc)


def _default_after(kind: str, connection: Connection) -> str:
    if kind == Authorization.Kind.SHARED:
        return reverse("authorizations:connection", kwargs={"name": connection.name})
    return reverse("authorizations:accounts")


# -- connect -----------------------------------------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
def connect(request: SignedInRequest, connection: str) -> HttpResponse:
    conn, kind = _connectable(request, connection)
    source = request.POST if request.method == "POST" else request.GET
    after = addresses.safe_return_to(request, source.get("next"), _default_after(kind, conn))
    held = source.get("held", "")
    if request.method == "POST":
        try:
            url = flow.begin(request, conn, kind, after, held=held or None)
        except flow.FlowError as exc:
            logger.info("connect %s by %s failed: %s", conn.name, request.user.get_username(), exc)
            error = _shown(request, exc)
            return _connect_page(request, conn, kind, after, held, error=error, status=502)
        logger.info("connect %s by %s: sent to the authorization server", conn.name, request.user)
        return _AuthorizationServerRedirect(url)
    return _connect_page(request, conn, kind, after, held)


def _connect_page(
    request: SignedInRequest,
    conn: Connection,
    kind: str,
    after: str,
    held: str,
    *,
    error: str = "",
    status: int = 200,
) -> HttpResponse:
    owner = request.user if kind == Authorization.Kind.PERSON else None
    discovery = _discovery_of(conn)
    if not error:
        # Which authorization server, and the scopes: said before the person goes there.
        try:
            discovery = flow.discovery_for(conn)
        except flow.FlowError as exc:
            error, status = _shown(request, exc), 502
    context = {
        "connection": conn,
        "kind": kind,
        "shared": kind == Authorization.Kind.SHARED,
        "next": after,
        "held": held,
        "error": error,
        "discovery": discovery,
        "scopes": flow.scopes_to_ask(conn, owner, discovery) if discovery else (),
        "authorization": Authorization.objects.filter(connection=conn, user=owner).first(),
    }
    response = render(request, "authorizations/connect.html", context, status=status)
    return _allow_form_to_authorization_server(response, discovery)


def _allow_form_to_authorization_server(
    response: HttpResponse, discovery: oauth.Discovery | None
) -> HttpResponse:
    """The connect form is answered with a redirect to the authorization server, and browsers
    hold a form's redirects to the page's CSP ``form-action`` too (CSP 3): without that
    server's origin there, Chromium blocks the person at the button."""
    endpoint = discovery.authorization_endpoint if discovery is not None else None
    parts = urlsplit(endpoint or "")
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return response
    # django-csp's public per-response update is its view decorator: applied to this response.
    update = csp_update({"form-action": [f"{parts.scheme}://{parts.netloc}"]})

    def view(*_: object) -> HttpResponse:
        return response

    # django-csp types its decorator for views taking a request; this one is called bare.
    update(view)()  # type: ignore[call-arg]
    return response


def _discovery_of(conn: Connection) -> oauth.Discovery | None:
    row = Discovery.objects.filter(connection=conn).first()
    if row is None:
        return None
    try:
        return oauth.Discovery.from_json(row.document)
    except (KeyError, TypeError):
        return None


# -- the callback ------------------------------------------------------------------------


@require_safe
def callback(request: SignedInRequest) -> HttpResponse:
    if not request.user.is_authenticated:
        # Not the sign-in page with this address as ``next``: the code would sit in its form.
        # Signing in starts a new session, which the request was not bound to anyway.
        error = "You were signed out while connecting. Sign in, then connect again."
        return render(request, "authorizations/failed.html", {"error": error}, status=400)
    try:
        done = flow.complete(request, request.GET)
    except flow.FlowError as exc:
        logger.info("oauth callback refused for %s: %s", request.user.get_username(), exc)
        # Shown at an address of its own: the callback's query (a code, a state) must stay
        # out of the page, the browser's history and what the page links to.
        request.session[FAILURE_KEY] = _shown(request, exc)
        return SeeOther(reverse("authorizations:failed"))
    authorization = done.authorization
    connection = authorization.connection
    logger.info(
        "connected %s on %s (%s)",
        request.user.get_username(),
        connection.name,
        authorization.kind,
    )
    default = _default_after(authorization.kind, connection)
    after = addresses.safe_return_to(request, done.return_to, default)
    if done.draft is not None:
        # What they had typed goes back to the page that sent them, once, for them only.
        key = pending.hold_draft(request, connection, after, done.draft)
        after = flow.with_query(after, restore=key)
    if authorization.kind == Authorization.Kind.PERSON:
        messages.success(
            request, _("Your account on %(server)s is connected.") % {"server": connection}
        )
    else:
        messages.success(
            request, _("The shared account of %(server)s is connected.") % {"server": connection}
        )
    return SeeOther(after)


FAILURE_KEY = "oauth_failure"


@login_required
@require_safe
def failed(request: HttpRequest) -> HttpResponse:
    error = request.session.pop(FAILURE_KEY, None)
    if error is None:
        return SeeOther(reverse("authorizations:accounts"))
    return render(request, "authorizations/failed.html", {"error": error}, status=400)


# -- disconnect ----------------------------------------------------------------------------


@login_required
@require_POST
def disconnect(request: SignedInRequest, pk: int) -> HttpResponse:
    authorization = get_object_or_404(Authorization.objects.select_related("connection"), pk=pk)
    own = authorization.user_id is not None and authorization.user_id == request.user.pk
    if not (own or is_operator(request.user)):
        # Someone else's: as if it did not exist.
        raise Http404(_("No such authorization."))
    connection = authorization.connection
    whose = "your account" if own else _whose(authorization)
    unrevoked = revoking.revoke(authorization)
    logger.info(
        "%s disconnected %s on %s (revoked at the server: %s)",
        request.user.get_username(),
        whose,
        connection.name,
        "no" if unrevoked else "yes",
    )
    messages.success(
        request,
        f"Disconnected {whose} on {connection}."
        + (f" (The authorization server {unrevoked}.)" if unrevoked else ""),
    )
    default = reverse("authorizations:accounts")
    return SeeOther(addresses.safe_return_to(request, request.POST.get("next"), default))


def _whose(authorization: Authorization) -> str:
    if authorization.user is None:
        return "the shared account" if authorization.kind == "shared" else "the client account"
    return f"{authorization.user.get_username()}'s account"


# -- the connected accounts of a person --------------------------------------------------


@login_required
@require_safe
def accounts(request: SignedInRequest) -> HttpResponse:
    authorizations = (
        Authorization.objects.filter(user=request.user)
        .select_related("connection")
        .order_by("connection__name")
    )
    return render(request, "authorizations/accounts.html", {"authorizations": authorizations})


# -- the client ID metadata document -----------------------------------------------------


@require_safe
@cache_control(public=True, max_age=3600)
def client_metadata(request: HttpRequest) -> HttpResponse:
    return JsonResponse(addresses.metadata_document())


# -- the operators' OAuth panel ----------------------------------------------------------


def _operator(request: HttpRequest) -> None:
    if not is_operator(request.user):
        raise PermissionDenied(_("The console is for operators."))


@login_required
@require_safe
def connection_panel(request: HttpRequest, name: str) -> HttpResponse:
    _operator(request)
    connection = get_object_or_404(Connection, name=name)
    return _panel(request, connection)


def _panel(
    request: HttpRequest, connection: Connection, *, error: str = "", status: int = 200
) -> HttpResponse:
    row = Discovery.objects.filter(connection=connection).first()
    context: dict[str, Any] = {
        "connection": connection,
        "discovery_row": row,
        "discovery": _discovery_of(connection),
        "registrations": ClientRegistration.objects.filter(connection=connection).order_by(
            "issuer"
        ),
        "authorizations": Authorization.objects.filter(connection=connection)
        .select_related("user")
        .order_by("user__username"),
        "error": error,
        "panel_url": request.path,
    }
    return render(request, "authorizations/connection.html", context, status=status)


@login_required
@require_POST
def discover_now(request: HttpRequest, name: str) -> HttpResponse:
    _operator(request)
    connection = get_object_or_404(Connection, name=name)
    try:
        found = flow.discovery_for(connection, refresh=True)
    except flow.FlowError as exc:
        return _panel(request, connection, error=str(exc), status=502)
    messages.success(
        request, _("Discovered: the authorization server is %(issuer)s.") % {"issuer": found.issuer}
    )
    return SeeOther(reverse("authorizations:connection", kwargs={"name": name}))


@login_required
@require_POST
def client_token(request: HttpRequest, name: str) -> HttpResponse:
    _operator(request)
    connection = get_object_or_404(Connection, name=name)
    if connection.auth != Connection.Auth.CLIENT_CREDENTIALS:
        raise Http404(_("This connection does not use client credentials."))
    try:
        client_credentials.client_credentials_now(connection)
    except flow.FlowError as exc:
        return _panel(request, connection, error=str(exc), status=502)
    logger.info("operator %s got a client credentials token for %s", request.user, name)
    messages.success(request, _("%(connection)s has a new token.") % {"connection": connection})
    return SeeOther(reverse("authorizations:connection", kwargs={"name": name}))
