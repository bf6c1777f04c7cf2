"""The operators' console: connections, connection tests, the cached catalog, tool exposure.

Only operators (``roles.is_operator``) get in: anyone else signed in gets 403, anyone signed
out the sign-in page. Secrets are write-only here: no page, message or log line carries the
token or a header value (the form renders them empty; logs name what changed, not to what).
With htmx, the test result and an exposure row come back as fragments; without JavaScript,
every form posts and the page reloads.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import wraps
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Q
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils.translation import gettext_lazy as _
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from mrtrweb.http import SeeOther, SignedInRequest, text_param
from mrtrweb.people.roles import active_usernames, is_operator

from .catalog import ProbeReport, authenticator_for, ensure_catalog, refresh_catalog
from .exposure_form import ExposureForm
from .forms import ConnectionForm
from .models import Connection, ToolExposure
from .probe import failure_kind, probe_summary

logger = logging.getLogger(__name__)

View = Callable[..., HttpResponse]

# Posted fields whose values never reach a log line or an error report.
SECRET_FIELDS = ("bearer_token", "headers", "oauth_client_secret", "oauth_private_key")


def operator_required(view: View) -> View:
    @login_required
    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not is_operator(request.user):
            raise PermissionDenied(_("The console is for operators."))
        return view(request, *args, **kwargs)

    return wrapper


def _htmx(request: HttpRequest) -> bool:
    return bool(getattr(request, "htmx", False))


# -- connections -------------------------------------------------------------------------


@operator_required
@require_safe
def connection_list(request: HttpRequest) -> HttpResponse:
    connections = Connection.objects.order_by("name").annotate(
        exposed_count=Count("exposures", filter=Q(exposures__exposed=True))
    )
    rows = [
        {
            "connection": c,
            "tools": len(c.catalog.get("tools") or []) if c.catalog_fetched_at else None,
        }
        for c in connections
    ]
    return render(request, "servers/list.html", {"rows": rows})


@sensitive_post_parameters(*SECRET_FIELDS)
@operator_required
@require_http_methods(["GET", "POST"])
def connection_create(request: HttpRequest) -> HttpResponse:
    form = ConnectionForm(request.POST or None)
    if request.method == "POST":
        if form.is_valid():
            connection = form.save()
            _log_saved(request, connection, form, created=True)
            messages.success(
                request, _("Connection “%(name)s” added. Test it now.") % {"name": connection.name}
            )
            return SeeOther(reverse("servers:edit", kwargs={"name": connection.name}))
        return _render_form(request, form, status=422)
    return _render_form(request, form)


@sensitive_post_parameters(*SECRET_FIELDS)
@operator_required
@require_http_methods(["GET", "POST"])
def connection_edit(request: HttpRequest, name: str) -> HttpResponse:
    connection = get_object_or_404(Connection, name=name)
    form = ConnectionForm(request.POST or None, instance=connection)
    if request.method == "POST":
        if form.is_valid():
            connection = form.save()
            _log_saved(request, connection, form, created=False)
            messages.success(request, _("Connection “%(name)s” saved.") % {"name": connection.name})
            return SeeOther(reverse("servers:edit", kwargs={"name": connection.name}))
        return _render_form(request, form, status=422)
    return _render_form(request, form)


def _render_form(request: HttpRequest, form: ConnectionForm, *, status: int = 200) -> HttpResponse:
    context = {
        "form": form,
        "connection": form.instance if form.editing else None,
        "retype_secrets": form.is_bound and form.secrets_were_typed,
        "usernames": active_usernames(),
        # mrtrweb's client ID at authorization servers that accept metadata documents.
        "client_metadata_url": settings.MRTRWEB_BASE_URL.rstrip("/")
        + reverse("authorizations:client-metadata"),
    }
    return render(request, "servers/form.html", context, status=status)


def _log_saved(
    request: HttpRequest, connection: Connection, form: ConnectionForm, *, created: bool
) -> None:
    # Names of what changed, never values: the values may be secrets.
    changed = [f for f in form.changed_data if f not in SECRET_FIELDS]
    changed = [f for f in changed if not f.startswith("clear_")]
    logger.info(
        "operator %s %s connection %s (fields: %s; secrets: %s)",
        request.user.get_username(),
        "created" if created else "changed",
        connection.name,
        ", ".join(changed) or "none",
        ", ".join(form.secret_changes()) or "unchanged",
    )


@operator_required
@require_POST
def connection_toggle(request: HttpRequest, name: str) -> HttpResponse:
    connection = get_object_or_404(Connection, name=name)
    enable = request.POST.get("enabled") == "1"
    Connection.objects.filter(pk=connection.pk).update(enabled=enable)
    verb = "enabled" if enable else "disabled"
    logger.info("operator %s %s connection %s", request.user.get_username(), verb, name)
    messages.success(
        request,
        _("Connection “%(name)s” enabled.") % {"name": name}
        if enable
        else _(
            "Connection “%(name)s” disabled. No one can start calls on it; rounds already "
            "parked remain."
        )
        % {"name": name},
    )
    return SeeOther(_next_url(request, reverse("servers:list")))


def _next_url(request: HttpRequest, default: str) -> str:
    wanted = request.POST.get("next", "")
    # Only our own pages: a path on this site, never another host.
    if wanted.startswith("/") and not wanted.startswith("//"):
        return wanted
    return default


# -- testing a connection ----------------------------------------------------------------


@operator_required
@require_POST
def connection_test(request: SignedInRequest, name: str) -> HttpResponse:
    connection = get_object_or_404(Connection, name=name)
    report = refresh_catalog(connection, authenticator_for(connection, request.user))
    logger.info(
        "operator %s tested connection %s: %s",
        request.user.get_username(),
        name,
        "ok" if report.ok else failure_kind(report),
    )
    context = {"connection": connection, "result": probe_summary(report, connection)}
    if _htmx(request):
        return render(request, "servers/_test_result.html", context)
    return render(request, "servers/test.html", context)


# -- the catalog -------------------------------------------------------------------------


@operator_required
@require_http_methods(["GET", "POST"])
def catalog(request: SignedInRequest, name: str) -> HttpResponse:
    connection = get_object_or_404(Connection, name=name)
    authenticator = authenticator_for(connection, request.user)
    if request.method == "POST":
        report: ProbeReport | None = refresh_catalog(connection, authenticator)
    else:
        # Re-listed only once the server's ttlMs has passed.
        report = ensure_catalog(connection, authenticator)
    data = connection.catalog or {}
    context = {
        "connection": connection,
        "report": report,
        "failure": probe_summary(report, connection) if report and not report.ok else None,
        "tools": data.get("tools") or [],
        "prompts": data.get("prompts") or [],
        "resources": data.get("resources") or [],
        "templates": data.get("resource_templates") or [],
        "dropped_tools": data.get("dropped_tools") or [],
        "exposed": _exposed_names(connection),
    }
    return render(request, "servers/catalog.html", context)


def _exposed_names(connection: Connection) -> set[str]:
    return set(
        ToolExposure.objects.filter(connection=connection, exposed=True).values_list(
            "tool_name", flat=True
        )
    )


# -- exposure ----------------------------------------------------------------------------


@operator_required
@require_http_methods(["GET", "POST"])
def exposure(request: SignedInRequest, name: str) -> HttpResponse:
    connection = get_object_or_404(Connection, name=name)
    if request.method == "POST":
        return _save_exposure(request, connection)
    report = ensure_catalog(connection, authenticator_for(connection, request.user))
    rows, stale = _exposure_rows(connection)
    context = {
        "connection": connection,
        "failure": probe_summary(report, connection) if report and not report.ok else None,
        "rows": rows,
        "stale": stale,
        "usernames": active_usernames(),
    }
    return render(request, "servers/exposure.html", context)


def _exposure_rows(connection: Connection) -> tuple[list[dict[str, Any]], list[ToolExposure]]:
    stored = {
        e.tool_name: e
        for e in ToolExposure.objects.filter(connection=connection).select_related(
            "route_user", "route_group"
        )
    }
    rows = []
    for tool in (connection.catalog or {}).get("tools") or []:
        name = tool.get("name", "")
        instance = stored.pop(name, None) or ToolExposure(connection=connection, tool_name=name)
        rows.append({"tool": tool, "form": ExposureForm(instance=instance, tool_name=name)})
    # Settings for tools the server no longer lists: kept (the tool may come back), shown apart.
    return rows, sorted(stored.values(), key=lambda e: e.tool_name)


def _save_exposure(request: HttpRequest, connection: Connection) -> HttpResponse:
    tool_name = text_param(request.POST, "tool")
    if tool_name is None:
        raise Http404(_("This server does not offer that tool."))
    tool = next(
        (t for t in (connection.catalog or {}).get("tools") or [] if t.get("name") == tool_name),
        None,
    )
    existing = ToolExposure.objects.filter(connection=connection, tool_name=tool_name).first()
    if tool is None and existing is None:
        raise Http404(_("This server does not offer that tool."))
    instance = existing or ToolExposure(connection=connection, tool_name=tool_name)
    form = ExposureForm(request.POST, instance=instance, tool_name=tool_name)
    saved = form.is_valid()
    if saved:
        data = form.cleaned_data
        exposure, _made = ToolExposure.objects.update_or_create(
            connection=connection,
            tool_name=tool_name,
            defaults={
                "exposed": data["exposed"],
                "routing": data["routing"] or "",
                "route_user": data["route_user"],
                "route_group": data["route_group"],
            },
        )
        logger.info(
            "operator %s set tool %s on %s: exposed=%s routing=%s",
            request.user.get_username(),
            tool_name,
            connection.name,
            exposure.exposed,
            exposure.routing or "inherit",
        )
        if not _htmx(request):
            said = (
                _("Saved: %(tool)s may now be started by end users.")
                if exposure.exposed
                else _("Saved: %(tool)s is operators only.")
            )
            messages.success(request, said % {"tool": tool_name})
            return SeeOther(reverse("servers:exposure", kwargs={"name": connection.name}))
        form = ExposureForm(instance=exposure, tool_name=tool_name)
    if _htmx(request):
        # 200 even when invalid: htmx swaps only successful responses by default.
        row = {"tool": tool or {"name": tool_name}, "form": form}
        context = {"connection": connection, "row": row, "saved": saved}
        return render(request, "servers/_exposure_row.html", context)
    rows, stale = _exposure_rows(connection)
    for row in rows:
        if row["tool"].get("name") == tool_name:
            row["form"] = form
    context = {
        "connection": connection,
        "rows": rows,
        "stale": stale,
        "usernames": active_usernames(),
        "failure": None,
    }
    return render(request, "servers/exposure.html", context, status=422)
