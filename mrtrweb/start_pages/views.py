"""The start pages: pick a connection, pick from its catalog, fill in the form, start the call.

Thin: the catalog comes from ``servers``, who may start what from ``servers.exposure``, the
call is started by ``engine.start_call``. A connection or item someone may not start is
treated as one that is not there (404, or the catalog without it).
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_safe

from mrtrweb.authorizations import flow as authorizing
from mrtrweb.authorizations import pending
from mrtrweb.authorizations.credentials import authenticator_for
from mrtrweb.calls import engine
from mrtrweb.calls.access import next_page
from mrtrweb.calls.models import Call
from mrtrweb.calls.presenting.server_content import pretty_json
from mrtrweb.http import SeeOther, SignedInRequest
from mrtrweb.servers.catalog import ProbeReport, ensure_catalog, refresh_catalog
from mrtrweb.servers.exposure import (
    may_start,
    offered_connection,
    offered_connections,
    sees_whole_catalog,
    startable_tools,
)
from mrtrweb.servers.models import Connection

from .prompts import PromptArgumentsForm, prompt_arguments
from .tools import ArgumentsForm, JsonArgumentsForm, NotFlat, flat_arguments
from .uri_templates import TemplateForm

logger = logging.getLogger(__name__)

SELECTION_KINDS = ("tool", "prompt", "resource", "template")


@login_required
@require_safe
def start(request: SignedInRequest) -> HttpResponse:
    connections = offered_connections(request.user)
    return render(
        request,
        "starting/connections.html",
        {"connections": connections, "sees_reasons": sees_whole_catalog(request.user)},
    )


@login_required
@require_http_methods(["GET", "POST"])
def start_on(request: SignedInRequest, connection: str) -> HttpResponse:
    conn = offered_connection(request.user, connection)
    if conn is None:
        raise Http404("No connection matches the given query.")
    # Listed with this person's account where the connection uses OAuth per person (the
    # catalog is kept for everyone, as any listing).
    authenticator = authenticator_for(conn, request.user)
    report: ProbeReport | None
    if request.method == "POST" and "refresh" in request.POST:
        report = refresh_catalog(conn, authenticator)
    elif request.method == "GET":
        report = ensure_catalog(conn, authenticator)
    else:
        report = None  # starting: the catalog shown with the form is the one to use
    selection = _allowed_selection(request, conn)
    if selection is None and report is None and request.method == "POST":
        # Posted without having seen a catalog here (a script, or the cache was emptied).
        report = ensure_catalog(conn, authenticator)
        selection = _allowed_selection(request, conn)
    context: dict[str, Any] = {"connection": conn, "report": report, "selection": selection}
    refused = bool(report and report.authorization_required)
    if authorizing.must_connect(conn, request.user, refused=refused):
        # Offered on the page; a start is sent to connect first (below).
        context["connect_url"] = authorizing.connect_url(conn, next_=request.get_full_path())
    if selection is None or "refresh" in request.POST:
        if request.GET.keys() & set(SELECTION_KINDS) and selection is None:
            context["selection_missing"] = True
        return render(
            request, "starting/connection.html", _catalog_context(request.user, conn, context)
        )

    restored = _restored(request, conn)
    form, json_mode, not_flat = _start_form(request, selection, restored)
    if request.method == "POST" and form.is_valid():
        if "connect_url" in context:
            return _connect_first(request, conn)
        kind, item = selection
        try:
            call = engine.start_call(
                connection=conn,
                method=_METHODS[kind],
                target=_target(kind, item, form),
                arguments=_arguments(kind, form),
                user=request.user,
                deliver_within=settings.MRTRWEB_START_WAIT,
            )
        except engine.NothingStarted as exc:
            # A crowd of starts on SQLite can outwait its lock timeout: say so and keep what
            # was typed (the bound form is shown again), rather than a server error.
            logger.warning("start on %s: nothing started, the database is busy (%s)", conn, exc)
            context["busy"] = True
        else:
            return SeeOther(next_page(call))
    context.update(
        form=form,
        restored=restored is not None,
        form_action=_without_restore(request),
        json_mode=json_mode,
        not_flat=not_flat,
        kind=selection[0],
        item=selection[1],
        json_url=_selection_url(conn, selection, as_json=True),
        fields_url=_selection_url(conn, selection),
    )
    response = render(
        request, "starting/connection.html", _catalog_context(request.user, conn, context)
    )
    if context.get("busy"):
        response.status_code = 503
        response["Retry-After"] = "2"
    return response


def _connect_first(request: SignedInRequest, conn: Connection) -> HttpResponse:
    """Send the person to connect their account, keeping what they typed (encrypted, for
    them and this session only): the form comes back filled in afterwards."""
    here = _without_restore(request)
    typed = {
        name: request.POST.getlist(name)
        for name in request.POST
        if name not in ("csrfmiddlewaretoken", "start")
    }
    held = pending.hold_draft(request, conn, here, typed)
    return SeeOther(authorizing.connect_url(conn, next_=here, held=held))


def _without_restore(request: HttpRequest) -> str:
    """This page's address without ``restore`` (a one-time key, spent on arrival)."""
    query = request.GET.copy()
    query.pop("restore", None)
    return request.path + (f"?{query.urlencode()}" if query else "")


def _restored(request: SignedInRequest, conn: Connection) -> QueryDict | None:
    """What the person typed before connecting their account (``?restore=``), once."""
    if request.method != "GET" or not request.GET.get("restore"):
        return None
    typed = pending.take_draft(request, conn, request.GET["restore"])
    if not isinstance(typed, dict):
        return None
    data = QueryDict(mutable=True)
    for name, values in typed.items():
        if isinstance(name, str) and isinstance(values, list):
            data.setlist(name, [str(v) for v in values])
    return data


_METHODS = {
    "tool": Call.Method.TOOL,
    "prompt": Call.Method.PROMPT,
    "resource": Call.Method.RESOURCE,
    "template": Call.Method.RESOURCE,
}


def _selection(request: HttpRequest, conn: Connection) -> tuple[str, dict[str, Any]] | None:
    """What the person picked from the catalog (``?tool=NAME`` and so on), as listed."""
    catalog = conn.catalog or {}
    lookups = {
        "tool": ("tools", "name"),
        "prompt": ("prompts", "name"),
        "resource": ("resources", "uri"),
        "template": ("resource_templates", "uriTemplate"),
    }
    for kind in SELECTION_KINDS:
        wanted = request.GET.get(kind)
        if wanted is None:
            continue
        listing, field = lookups[kind]
        for item in catalog.get(listing) or []:
            if isinstance(item, dict) and item.get(field) == wanted:
                return kind, item
        return None
    return None


def _allowed_selection(
    request: SignedInRequest, conn: Connection
) -> tuple[str, dict[str, Any]] | None:
    """The picked item, if this person may start it (else as if it were not listed)."""
    selection = _selection(request, conn)
    if selection is None:
        return None
    kind, item = selection
    if kind == "tool":
        return selection if may_start(request.user, conn, item["name"]) else None
    # Prompts and resources are not exposable: only operators and admins use them.
    return selection if sees_whole_catalog(request.user) else None


def _selection_url(
    conn: Connection, selection: tuple[str, dict[str, Any]], *, as_json: bool = False
) -> str:
    kind, item = selection
    field = {"tool": "name", "prompt": "name", "resource": "uri", "template": "uriTemplate"}[kind]
    query = {kind: item[field], **({"json": "1"} if as_json else {})}
    return f"{reverse('starting:start', kwargs={'connection': conn.name})}?{urlencode(query)}"


def _start_form(
    request: HttpRequest, selection: tuple[str, dict[str, Any]], restored: QueryDict | None = None
) -> tuple[Any, bool, str]:
    """The form for the picked item; for tools also whether it is the JSON editor, and why.

    ``restored``: what the person had typed before they went to connect their account.
    """
    kind, item = selection
    data = request.POST if request.method == "POST" else restored
    if kind == "prompt":
        return PromptArgumentsForm(prompt_arguments(item), data=data), False, ""
    if kind == "template":
        return TemplateForm(item["uriTemplate"], data=data), False, ""
    if kind == "resource":
        return TemplateForm("", data=data), False, ""
    schema = item.get("inputSchema")
    try:
        specs = flat_arguments(schema)
    except NotFlat as exc:
        specs, not_flat = None, str(exc)
    else:
        not_flat = ""
    if specs is None or request.GET.get("json"):
        defaults = {
            name: prop["default"]
            for name, prop in ((schema or {}).get("properties") or {}).items()
            if isinstance(prop, dict) and "default" in prop
        }
        form = JsonArgumentsForm(data=data, initial={"arguments": pretty_json(defaults)})
        return form, True, not_flat
    return ArgumentsForm(specs, data=data), False, ""


def _target(kind: str, item: dict[str, Any], form: Any) -> str:
    if kind == "template":
        return form.uri()
    if kind == "resource":
        return item["uri"]
    return item["name"]


def _arguments(kind: str, form: Any) -> dict[str, Any] | str | None:
    if kind in ("resource", "template"):
        return None
    if isinstance(form, JsonArgumentsForm):
        return form.cleaned_data["arguments"]
    return form.arguments()


def _render_catalog(
    request: SignedInRequest, conn: Connection, context: dict[str, Any]
) -> HttpResponse:
    """The connection's page: its catalog, and the form of what was picked, if anything."""
    context = _catalog_context(request.user, conn, context)
    return render(request, "starting/connection.html", context)


def _catalog_context(user: User, conn: Connection, context: dict[str, Any]) -> dict[str, Any]:
    catalog = conn.catalog or {}
    server = conn.server_info()
    everything = sees_whole_catalog(user)
    allowed = {tool.name for tool in startable_tools(user, conn)}
    context.update(
        server_name=(server.get("info") or {}).get("name", ""),
        server_version=(server.get("info") or {}).get("version", ""),
        instructions=server.get("instructions", ""),
        tools=[t for t in catalog.get("tools") or [] if t.get("name") in allowed],
        prompts=(catalog.get("prompts") or []) if everything else [],
        resources=(catalog.get("resources") or []) if everything else [],
        templates=(catalog.get("resource_templates") or []) if everything else [],
        dropped_tools=(catalog.get("dropped_tools") or []) if everything else [],
        start_url=reverse("starting:start", kwargs={"connection": conn.name}),
        has_catalog=bool(catalog),
    )
    return context
