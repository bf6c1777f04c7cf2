"""The call pages: the list of a person's calls, a call's page, and starting it again. Thin,
as :mod:`.views` (the round pages) is: access in :mod:`mrtrweb.calls.access` only, a call
someone may not see is a 404; the engine changes state."""

from __future__ import annotations

import json

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.functional import Promise
from django.utils.safestring import SafeString
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_POST, require_safe

from mrtrweb.http import SeeOther, SignedInRequest
from mrtrweb.live import frames
from mrtrweb.people.roles import is_admin

from .. import engine
from ..access import (
    can_act_on_call,
    can_answer,
    next_page,
    readings,
    restarts_of,
    visible_call,
    visible_calls,
)
from ..models import Call, Round
from ..presenting.authorization_wait import authorization_wait
from ..presenting.outcome_badges import expiry_of, listed_calls, outcome_of, with_error_flag
from ..presenting.policies import comments_of, policy_states
from ..presenting.rounds import round_views
from ..presenting.server_content import pretty_json, result_view, server_name
from . import refresh

# A list shows none of these, and results can be big: the outcome reads ``result_is_error``.
LIST_DEFERRED = ("result", "arguments_json", "credentials", "tool")


@login_required
@require_safe
def call_list(request: SignedInRequest) -> HttpResponse:
    calls = with_error_flag(visible_calls(request.user)).defer(*LIST_DEFERRED)
    if is_admin(request.user) and request.GET.get("mine"):
        calls = calls.filter(started_by=request.user)
    return render(request, "calls/list.html", {"rows": listed_calls(calls[:200])})


@login_required
@require_safe
def call_page(request: SignedInRequest, pk: int) -> HttpResponse:
    call = _visible_call_or_404(request.user, pk)
    rounds = list(
        call.rounds.select_related(
            "answered_by", "assigned_user", "assigned_group", "claimed_by"
        ).order_by("index")
    )
    waiting = authorization_wait(call, request.user)
    # Nothing is on its way while the call waits for an account: the wait says so instead.
    in_flight = refresh.in_flight(call, rounds) and waiting is None
    pending = [r for r in rounds if r.status == Round.Status.PENDING]
    # Each round as this person may read it: whole, their part, or only its status.
    read = readings(request.user, rounds)
    context = {
        "call": call,
        "crumb": _crumb(request.user, call),
        "outcome": outcome_of(call, rounds),
        "expiry": expiry_of(rounds) if call.status == Call.Status.EXPIRED else None,
        "progress": _progress(call, rounds) if in_flight else None,
        "rounds": round_views(rounds, read),
        # Notes answerers left for the requester (kept in the audit trail, never sent).
        "comments": comments_of(call, request.user, readable=_read_whole(read)),
        "pending_policy": policy_states(pending[-1:])[pending[-1].pk] if pending else [],
        "pending": pending[-1] if pending else None,
        # A waiting round that is not theirs is said to wait, not for whom nor where.
        "pending_read": bool(pending) and read[pending[-1].pk] is not None,
        # Whoever cannot answer the waiting round (a requester whose round went to a
        # group, say) sees where it stands, not an "Answer" button that leads nowhere.
        "may_answer": bool(pending) and can_answer(request.user, pending[-1]),
        # The retry view asks can_answer too: show the button exactly where it works.
        "can_retry": {
            r.pk for r in rounds if r.status == Round.Status.FAILED and can_answer(request.user, r)
        },
        "in_flight": in_flight,
        "result": result_view(call.method, call.result),
        "arguments": _pretty_arguments(call.arguments_json),
        "server_name": server_name(call.connection),
        "can_act": can_act_on_call(request.user, call),
        "restarts": restarts_of(request.user, call),
        "authorization_wait": waiting,
    }
    context["refresh_after"] = refresh.reload_after(request, call, rounds, context)
    return render(request, "calls/call.html", context)


def _read_whole(read: dict[int, Round | None]) -> set[int]:
    """The rounds of ``read`` (``access.readings``) read whole, not by a part or a status."""
    return {pk for pk, shown in read.items() if shown is not None and not shown.split}


def _visible_call_or_404(user: User, pk: int) -> Call:
    call = visible_call(user, pk)
    if call is None:
        raise Http404("No call matches the given query.")
    return call


def _crumb(user: User, call: Call) -> tuple[str | Promise, str]:
    """Where the call page's breadcrumb leads: "My calls" for its caller only; an admin's
    way in is the dashboard, anyone else's their inbox."""
    if call.started_by_id == user.pk:
        return _("My calls"), reverse("calls:list") + ("?mine=1" if is_admin(user) else "")
    if is_admin(user):
        return _("Dashboard"), reverse("dashboard:rounds")
    return _("Inbox"), reverse("inbox:index")


def _progress(call: Call, rounds: list[Round]) -> SafeString | None:
    """The server's latest progress on what is in flight now (the same bar live pages get),
    or None: progress kept from the first request or an earlier round is not shown again."""
    kept = call.progress
    if not isinstance(kept, dict):
        return None
    since = call.sent_at
    for r in rounds:
        if r.status == Round.Status.DELIVERING and r.delivering_since is not None:
            since = r.delivering_since
    at = float(kept.get("at") or 0.0)
    if since is None or at < since.timestamp():
        return None
    return frames.progress(
        call_id=call.pk,
        at=at,
        value=float(kept.get("progress") or 0.0),
        total=kept.get("total"),
        message=str(kept.get("message") or ""),
    )


def _pretty_arguments(text: str) -> str:
    try:
        return pretty_json(json.loads(text))
    except ValueError:
        return text


@login_required
@require_POST
def restart(request: SignedInRequest, pk: int) -> HttpResponse:
    call = _visible_call_or_404(request.user, pk)
    if not can_act_on_call(request.user, call):
        raise Http404("No call matches the given query.")
    if call.status not in (Call.Status.EXPIRED, Call.Status.FAILED):
        return render(
            request, "calls/conflict.html", {"call": call, "problem": "not_restartable"}, status=409
        )
    try:
        new = engine.restart(call, request.user, deliver_within=settings.MRTRWEB_START_WAIT)
    except engine.NothingStarted:
        # Nothing was stored: the old call's page says so, and its button starts again.
        messages.error(request, _("The database was busy, so nothing was started. Start it again."))
        return SeeOther(reverse("calls:call", args=[call.pk]))
    return SeeOther(next_page(new))
