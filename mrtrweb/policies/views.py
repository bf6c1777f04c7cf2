"""The operators' approval policy pages: a connection's policy and each tool's, beside the
connection's other console tabs (``/operators/<name>/policy/``, ``?tool=`` for a tool's)."""

from __future__ import annotations

import logging
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils.http import urlencode
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods

from mrtrweb.http import SeeOther, SignedInRequest, text_param
from mrtrweb.people.roles import active_usernames, is_operator
from mrtrweb.servers.models import Connection

from .describe import describe
from .forms import PolicyForm
from .models import Policy
from .resolve import policy_for
from .validation import renewable_tool

__all__ = ["policy"]

logger = logging.getLogger(__name__)


def _here(connection: Connection, tool_name: str) -> str:
    url = reverse("policies:policy", kwargs={"name": connection.name})
    return f"{url}?{urlencode({'tool': tool_name})}" if tool_name else url


@login_required
@require_http_methods(["GET", "POST"])
def policy(request: SignedInRequest, name: str) -> HttpResponse:
    if not is_operator(request.user):
        raise PermissionDenied(_("The console is for operators."))
    connection = get_object_or_404(Connection, name=name)
    source = request.POST if request.method == "POST" else request.GET
    tool_name = text_param(source, "tool")
    if tool_name is None:
        raise Http404(_("This server does not offer that tool."))
    tools = (connection.catalog or {}).get("tools") or []
    tool = next((t for t in tools if t.get("name") == tool_name), None)
    row = Policy.objects.filter(connection=connection, tool_name=tool_name).first()
    if tool_name and tool is None and row is None:
        raise Http404(_("This server does not offer that tool."))
    if request.method == "POST" and request.POST.get("remove") == "1" and tool_name:
        Policy.objects.filter(connection=connection, tool_name=tool_name).delete()
        messages.success(
            request, _("%(tool)s follows the connection's policy again.") % {"tool": tool_name}
        )
        return SeeOther(_here(connection, ""))
    if request.method == "POST":
        form = PolicyForm(request.POST, tool=tool)
        if form.is_valid():
            form.save(connection, tool_name)
            logger.info(
                "operator %s set the policy of %s%s: %s",
                request.user.get_username(),
                connection.name,
                f" tool {tool_name}" if tool_name else "",
                form.snapshot.to_json() if form.snapshot else {},
            )
            messages.success(request, _("Policy saved."))
            return SeeOther(_here(connection, tool_name))
        status = 422
    else:
        form = PolicyForm(initial=PolicyForm.initial_for(row), tool=tool)
        status = 200
    context: dict[str, Any] = {
        "connection": connection,
        "tab": "policy",
        "form": form,
        "tool": tool,
        "tool_name": tool_name,
        "has_row": row is not None,
        "renewable": renewable_tool(tool) if tool else None,
        "connection_rules": describe(policy_for(connection, None)),
        "tool_rows": [
            {
                "name": t.get("name", ""),
                "title": t.get("title") or "",
                "rules": describe(policy_for(connection, t.get("name", ""))),
                "own": t.get("name", "") in _own_rows(connection),
                "url": _here(connection, t.get("name", "")),
            }
            for t in tools
        ],
        "usernames": active_usernames(),
    }
    return render(request, "policies/policy.html", context, status=status)


def _own_rows(connection: Connection) -> set[str]:
    return set(
        Policy.objects.filter(connection=connection)
        .exclude(tool_name="")
        .values_list("tool_name", flat=True)
    )
