"""The admins' dashboard: every round and every call, actions on rounds, a call's audit trail.

Thin, like every view: parse, authorise, render. Status changes go through
:mod:`mrtrweb.calls.engine` only. Only admins (``roles.is_admin``) get in: strangers are sent
to sign in, everyone else gets 403.

Lists answer htmx requests with the results fragment only (filters and pages swap the table,
and push the URL); the same URLs render whole pages for browsers without JavaScript.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from functools import wraps
from typing import Any
from urllib.parse import urlsplit

from django.contrib import messages
from django.contrib.auth.models import Group
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.db.models import F
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.cache import patch_vary_headers
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_POST, require_safe
from django_htmx.http import HttpResponseClientRedirect

from mrtrweb.calls import engine
from mrtrweb.calls.models import Call, Event, Round
from mrtrweb.calls.presenting.history import with_start
from mrtrweb.calls.presenting.outcome_badges import outcomes_for
from mrtrweb.calls.presenting.policies import policy_states
from mrtrweb.http import SeeOther, whole_number
from mrtrweb.people.roles import is_admin

from .audit import event_views, round_digests
from .listing import (
    FIRST_DIRECTION,
    FIRST_DIRECTION_CALLS,
    CallFilters,
    RoundFilters,
    filtered_calls,
    filtered_rounds,
    first_question,
    page_number,
    paginate,
    user_by_username,
)

# The most rounds one bulk post acts on (two pages' worth).
MAX_BULK = 100
ACTIONS = {
    "reassign": _("Reassign"),
    "release": _("Release the claim"),
    "cancel": _("Cancel (tell the server)"),
    "expire": _("Expire"),
    # For rounds whose delivery outcome is unknown (status "unknown") only.
    "resend": _("Resend (outcome unknown)"),
    "abandon": _("Abandon (outcome unknown)"),
}
DONE = {
    "reassign": "reassigned",
    "release": "released",
    "cancel": "cancelled",
    "expire": "expired",
    "resend": "resent",
    "abandon": "abandoned",
}
FLAGGED_ONLY = {"resend", "abandon"}
# Actions that cannot be undone ask first: the same form again, as a page that names the rounds,
# with the choice posted once more and ``confirmed`` (no JavaScript needed; with htmx it swaps
# in place of the list). Releasing a claim and resending an answer are safe to repeat.
CONFIRM = {
    "reassign": "Reassign",
    "cancel": "Cancel",
    "expire": "Expire",
    "abandon": "Abandon",
}
CONFIRM_WHY = {
    "reassign": _(
        "The people they wait for now stop seeing them, and whatever they typed "
        "without submitting is lost."
    ),
    "cancel": _(
        "The server is told each question was cancelled; the call goes on without an "
        "answer, or ends. This cannot be undone."
    ),
    "expire": _("Nobody can answer them any more. This cannot be undone."),
    "abandon": _(
        "Whether the server took their answers is unknown; abandoning gives up on them "
        "without sending again. This cannot be undone."
    ),
}


def admin_only(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.user.is_authenticated:
            to_login = redirect_to_login(request.get_full_path())
            if getattr(request, "htmx", False):
                # A swapped-in sign-in form would land inside the table; load the page instead.
                return HttpResponseClientRedirect(to_login.url)
            return to_login
        if not is_admin(request.user):
            raise PermissionDenied(_("The dashboard is for admins."))
        return view(request, *args, **kwargs)

    return wrapped


def _partial(request: HttpRequest) -> bool:
    """Whether to answer with the results fragment: an htmx swap, not a history restore."""
    htmx: Any = getattr(request, "htmx", None)
    return bool(htmx) and not htmx.history_restore_request and not htmx.boosted


def _vary(response: HttpResponse) -> HttpResponse:
    # The same URL is a whole page or a fragment, depending on this header.
    patch_vary_headers(response, ("HX-Request",))
    return response


@admin_only
@require_safe
def home(request: HttpRequest) -> HttpResponse:
    return redirect("dashboard:rounds")


# -- rounds ----------------------------------------------------------------------------------


def _rounds_context(query: QueryDict) -> dict[str, Any]:
    filters = RoundFilters(query)
    page = paginate(filtered_rounds(filters), page_number(query.get("page")))
    states = policy_states(page.items)
    for round in page.items:
        round.question = first_question(round)
        # Each approval policy's state of the round ("approvals 1 of 2"), as labels.
        round.policy_labels = states[round.pk]
    sort = filters.cleaned_data.get("sort") if filters.is_valid() else "-created"
    list_url = reverse("dashboard:rounds")
    return {
        "filters": filters,
        "page": page,
        "query": query,
        "sort": sort or "-created",
        "first_direction": FIRST_DIRECTION,
        "list_url": list_url,
        "here": f"{list_url}?{query.urlencode()}" if query else list_url,
        "actions": ACTIONS,
        # Listed even for an empty page, so every page costs the same number of queries.
        "groups": list(Group.objects.order_by("name")),
        "now": timezone.now(),
    }


@admin_only
@require_safe
def rounds(request: HttpRequest) -> HttpResponse:
    context = _rounds_context(request.GET)
    if _partial(request):
        return _vary(render(request, "dashboard/_round_results.html", context))
    return _vary(render(request, "dashboard/rounds.html", context))


def _outcome_after_refusal(round_id: int, action: str) -> str:
    """Why the engine refused, said from the round's state now (someone else got there)."""
    status = Round.objects.filter(pk=round_id).values_list("status", flat=True).first()
    if action in FLAGGED_ONLY:
        return "not waiting for an admin"
    if status in (Round.Status.SUBMITTED, Round.Status.DELIVERING, Round.Status.DELIVERED):
        return "already answered"
    if status == Round.Status.CANCELLED:
        return "already cancelled"
    if status == Round.Status.EXPIRED:
        return "already expired"
    if status == Round.Status.FAILED:
        return "not pending (delivery failed)"
    if status == Round.Status.PENDING and action == "release":
        return "not claimed"
    return "refused"


def _act(action: str, round: Round, actor: Any, target: dict[str, Any]) -> str:
    try:
        if action == "reassign":
            engine.reassign(round, actor, **target)
        elif action == "release":
            engine.release(round, actor)
        elif action == "cancel":
            engine.cancel_round(round, actor)
        elif action == "expire":
            engine.expire(round, actor)
        elif action == "resend":
            engine.resend(round, actor)
        elif action == "abandon":
            engine.abandon_flagged(round, actor)
    except engine.EngineError:
        return _outcome_after_refusal(round.pk, action)
    return DONE[action]


def _summary(action: str, outcomes: Counter[str]) -> tuple[int, str]:
    done = outcomes.get(DONE[action], 0)
    parts = [f"{count} {label}" for label, count in outcomes.most_common()]
    level = messages.SUCCESS if done == sum(outcomes.values()) else messages.WARNING
    if not done:
        level = messages.ERROR
    return level, f"{ACTIONS[action]}: " + ", ".join(parts) + "."


def _reassign_target(post: QueryDict) -> dict[str, Any] | str:
    """``{"user": u}`` or ``{"group": g}`` from the form, or what is wrong with it."""
    username = post.get("assign_user", "").strip()
    group_name = post.get("assign_group", "").strip()
    if bool(username) == bool(group_name):
        return str(_("Reassign to one user or one group: fill in exactly one of the two."))
    if username:
        user = user_by_username(username)
        if user is None:
            return _("There is no active user '%(name)s'.") % {"name": username}
        return {"user": user}
    group = Group.objects.filter(name=group_name).first()
    if group is None:
        return _("There is no group '%(name)s'.") % {"name": group_name}
    return {"group": group}


def _list_query(post: QueryDict) -> QueryDict:
    """The filters of the list the post came from (``next``), to show it again."""
    next_url = post.get("next", "")
    list_url = reverse("dashboard:rounds")
    if next_url and url_has_allowed_host_and_scheme(next_url, allowed_hosts=None):
        parts = urlsplit(next_url)
        if parts.path == list_url:
            return QueryDict(parts.query)
    return QueryDict()


@admin_only
@require_POST
def bulk(request: HttpRequest) -> HttpResponse:
    post = request.POST
    one = post.get("one", "")
    if one:
        # A row's own button: "<action>:<round id>", whatever boxes are ticked.
        action, _sep, raw_ids = one.partition(":")
        raw = [raw_ids]
    else:
        action = post.get("action", "")
        raw = post.getlist("rounds")
    numbers = (whole_number(x) for x in raw)
    ids = list(dict.fromkeys(n for n in numbers if n is not None))
    if action not in ACTIONS:
        messages.error(request, _("Choose an action."))
    elif not ids:
        messages.error(request, _("Tick at least one round."))
    elif len(ids) > MAX_BULK:
        messages.error(request, _("At most %(count)s rounds at a time.") % {"count": MAX_BULK})
    else:
        target: dict[str, Any] | str = {}
        if action == "reassign":
            target = _reassign_target(post)
        if isinstance(target, str):
            messages.error(request, target)
        elif action in CONFIRM and post.get("confirmed") != "1":
            return _confirm(request, action, ids, target)
        else:
            found = Round.objects.select_related("call__connection").in_bulk(ids)
            outcomes: Counter[str] = Counter()
            for round_id in ids:
                round = found.get(round_id)
                outcomes[_act(action, round, request.user, target) if round else "not found"] += 1
            level, text = _summary(action, outcomes)
            messages.add_message(request, level, text)

    query = _list_query(post)
    if _partial(request):
        return _vary(render(request, "dashboard/_round_results.html", _rounds_context(query)))
    list_url = reverse("dashboard:rounds")
    return SeeOther(f"{list_url}?{query.urlencode()}" if query else list_url)


def _confirm(
    request: HttpRequest, action: str, ids: list[int], target: dict[str, Any]
) -> HttpResponse:
    """The confirmation step of ``action`` on the rounds ``ids``: what happens, to which."""
    rounds = list(
        Round.objects.filter(pk__in=ids)
        .select_related("call__connection", "assigned_user", "assigned_group", "claimed_by")
        .defer("request_state", "answers")
        .order_by("pk")
    )
    post = request.POST
    context = {
        "action": action,
        "verb": CONFIRM[action],
        "why": CONFIRM_WHY[action],
        "rounds": rounds,
        "missing": len(ids) - len(rounds),
        "target": target,
        # Posted again as they came, so the confirmed post is the same request.
        "one": post.get("one", ""),
        "ids": [round.pk for round in rounds],
        "assign_user": post.get("assign_user", ""),
        "assign_group": post.get("assign_group", ""),
        "next": post.get("next", ""),
        "back": _back_to_list(post),
    }
    if _partial(request):
        return _vary(render(request, "dashboard/_confirm.html", context))
    return _vary(render(request, "dashboard/confirm.html", context))


def _back_to_list(post: QueryDict) -> str:
    query = _list_query(post)
    list_url = reverse("dashboard:rounds")
    return f"{list_url}?{query.urlencode()}" if query else list_url


# -- calls -----------------------------------------------------------------------------------


@admin_only
@require_safe
def calls(request: HttpRequest) -> HttpResponse:
    query = request.GET
    filters = CallFilters(query)
    page = paginate(filtered_calls(filters), page_number(query.get("page")))
    sort = filters.cleaned_data.get("sort") if filters.is_valid() else "-created"
    context = {
        "filters": filters,
        "page": page,
        "query": query,
        "sort": sort or "-created",
        "first_direction": FIRST_DIRECTION_CALLS,
        "list_url": reverse("dashboard:calls"),
        # What came of each call, in words (one query for the page's answers).
        "outcomes": outcomes_for(page.items),
    }
    if _partial(request):
        return _vary(render(request, "dashboard/_call_results.html", context))
    return _vary(render(request, "dashboard/calls.html", context))


# -- the audit trail -------------------------------------------------------------------------


@admin_only
@require_safe
def call_audit(request: HttpRequest, pk: int) -> HttpResponse:
    call = get_object_or_404(
        Call.objects.select_related("connection", "started_by").defer(
            "tool",
            "result",
            "connection__bearer_token",
            "connection__headers",
            "connection__catalog",
        ),
        pk=pk,
    )
    # The round rows are read without their requestState: the audit shows its digest only.
    events = (
        Event.objects.filter(call=call)
        .select_related("actor")
        .annotate(round_index=F("round__index"))
        .order_by("created_at", "id")
    )
    rounds = (
        Round.objects.filter(call=call)
        .select_related("assigned_user", "assigned_group", "answered_by", "claimed_by")
        .defer("request_state", "input_requests", "answers")
        .order_by("index")
    )
    context = {
        "call": call,
        # The start is read from the call row (calls.presenting.history): it is not stored as an
        # event.
        "events": event_views(with_start(call, events)),
        "rounds": round_digests(rounds),
        "restarts": list(Call.objects.filter(restarted_from=call).values_list("pk", flat=True)),
    }
    return render(request, "dashboard/audit.html", context)
