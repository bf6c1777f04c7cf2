"""The pages of calls and rounds. Thin: parse, authorise, render; the engine changes state.

Access is decided in :mod:`mrtrweb.calls.access` only; a call or round someone may not see
is a 404, exactly like one that does not exist.
"""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils import timezone
from django.utils.functional import Promise
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.safestring import SafeString
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_http_methods, require_POST, require_safe
from django_htmx.http import HttpResponseClientRefresh
from django_htmx.middleware import HtmxDetails

from mrtrweb.http import SeeOther, SignedInRequest
from mrtrweb.live import frames
from mrtrweb.people.roles import is_admin
from mrtrweb.servers.models import Connection

from .. import engine
from ..access import (
    by_key,
    can_act_on_call,
    can_answer,
    next_page,
    readings,
    restarts_of,
    sees_call,
    shown_to,
    taken_from,
    visible_call,
    visible_calls,
    visible_round,
    visible_rounds,
)
from ..models import Call, Round
from ..presenting.authorization_wait import authorization_wait
from ..presenting.outcome_badges import expiry_of, listed_calls, outcome_of, with_error_flag
from ..presenting.policies import comments_of, policy_states
from ..presenting.rounds import RoundAnswers, person_name, round_views, typed_values
from ..presenting.server_content import pretty_json, result_view
from . import refresh, url_consent
from .round_approvals import is_quorum, quorum_view, round_comments

# Prefixes of URL-mode requests a person agreed to open, per round: {"<round pk>": [prefix]}.


# -- the round page ------------------------------------------------------------------------------


class HtmxRequest(SignedInRequest):
    """A signed-in request as django-htmx's middleware leaves it: ``htmx`` says whether htmx
    sent it. A type only."""

    htmx: HtmxDetails


@login_required
@require_http_methods(["GET", "POST"])
def round_page(request: SignedInRequest, pk: int) -> HttpResponse:
    round = visible_round(request.user, pk)
    if round is None:
        return _taken_or_404(request, pk)
    round = shown_to(request.user, round)  # a split round: only this person's part
    consented = url_consent.consented(request, round)
    # Filled in from the call this one restarted: only answers this person could read there.
    user = request.user
    saved = (
        engine.saved_answers_for(round, lambda rounds: readings(user, rounds))
        if round.is_pending
        else {}
    )
    if request.method == "GET":
        answers = RoundAnswers(round, saved=saved, consented=consented, tz=_tz())
        return _render_round(request, round, answers)

    if not can_answer(request.user, round):
        raise Http404("No round matches the given query.")
    post = request.POST
    answers = RoundAnswers(round, data=post, saved=saved, consented=consented, tz=_tz())
    if not round.is_pending:
        return _taken(request, round, answers)

    if "consent" in post:
        section = answers.section_for_prefix(post["consent"])
        if section is None or not section.can_open:
            answers.quiet()
            return _render_round(request, round, answers, status=400, problem="bad_consent")
        url_consent.record_consent(request, round, section.prefix)
        if not answers.has_forms:
            return SeeOther(round.get_absolute_url())
        # Re-render rather than redirect, so what the person typed elsewhere is kept.
        answers = RoundAnswers(
            round, data=post, saved=saved, consented=url_consent.consented(request, round), tz=_tz()
        )
        answers.quiet()
        return _render_round(request, round, answers)

    action = post.get("action", "")
    # A note for the requester, kept in the audit trail; never part of the answers.
    comment = post.get("comment", "")
    try:
        if action in ("approve", "reject"):
            if not is_quorum(round):
                return _render_round(request, round, answers, status=400, problem="no_action")
            engine.vote(
                round,
                request.user,
                action,
                comment=comment,
                deliver_within=settings.MRTRWEB_ANSWER_WAIT,
            )
            return SeeOther(next_page(Call.objects.get(pk=round.call_id), request.user))
        if action == "abandon":
            if not answers.unsupported:
                return _render_round(request, round, answers, status=400, problem="not_abandonable")
            engine.abandon(round, request.user)
            return SeeOther(round.call.get_absolute_url())
        if action in ("decline", "cancel"):
            if not answers.answerable:
                return _render_round(request, round, answers, status=409, problem="unanswerable")
            answered = engine.answer(
                round,
                answers.refused(action),
                request.user,
                deliver_within=settings.MRTRWEB_ANSWER_WAIT,
                comment=comment,
            )
        elif action == "accept":
            if not answers.can_accept:
                return _render_round(request, round, answers, status=400, problem="cannot_accept")
            if not answers.is_valid():
                return _render_round(request, round, answers, status=422, problem="invalid")
            answered = engine.answer(
                round,
                answers.accepted(),
                request.user,
                deliver_within=settings.MRTRWEB_ANSWER_WAIT,
                comment=comment,
            )
        else:
            return _render_round(request, round, answers, status=400, problem="no_action")
    except engine.NotEligible:
        round.refresh_from_db()
        return _render_round(request, round, answers, status=403, problem="not_eligible")
    except (engine.AlreadyVoted, engine.SelfApproval, engine.NoProposal) as refused:
        round.refresh_from_db()
        problem = {
            engine.AlreadyVoted: "voted",
            engine.SelfApproval: "self_approval",
            engine.NoProposal: "no_proposal",
        }[type(refused)]
        return _render_round(request, round, answers, status=409, problem=problem)
    except engine.AlreadyAnswered:
        round.refresh_from_db()
        if round.is_pending and is_quorum(round):
            # Someone proposed answers first: show theirs to approve or reject, and read
            # back what this person typed (never dropped).
            return _render_round(
                request,
                round,
                answers,
                status=409,
                problem="proposed_first",
                typed=typed_values(answers),
            )
        return _taken(request, round, answers)
    except engine.NotAnswerable:
        round.refresh_from_db()
        return _render_round(request, round, answers, status=409, problem="unanswerable")
    url_consent.forget_consent(request, round)
    # Delivered while the person waited: straight to the next round, or to the result. The
    # round the engine returns carries its call as it is now (as the delivery stored it).
    return SeeOther(next_page(answered.call, request.user))


def _render_round(
    request: SignedInRequest,
    round: Round,
    answers: RoundAnswers,
    *,
    status: int = 200,
    problem: str = "",
    claim_problem: str = "",
    typed: Any = (),
) -> HttpResponse:
    call = round.call
    policy_state = policy_states([round])[round.pk]
    quorum = quorum_view(round, request.user, policy_state)
    context = {
        "quorum": quorum,
        "typed": typed,
        "comments": round_comments(round, call, request.user, quorum is not None),
        "round": round,
        "call": call,
        "answers": answers,
        "problem": problem,
        "server_name": _server_name(call.connection),
        # The person's deadline: the renewal policy's, when it renews the server's state.
        "deadline_passed": round.answer_by is not None and round.answer_by <= timezone.now(),
        "can_answer": can_answer(request.user, round),
        "can_claim": _can_claim(request.user, round),
        "can_release": _can_release(request.user, round),
        "claim_problem": claim_problem,
        "authorization_wait": authorization_wait(call, request.user),
        "part": getattr(round, "part", None),
        "policy_state": policy_state,
    }
    return render(request, "calls/round.html", context, status=status)


def _taken_or_404(request: SignedInRequest, pk: int) -> HttpResponse:
    """A round this person no longer sees: the "taken" page when another member of their
    group took it (what they posted kept), else the 404 anyone else gets."""
    round = taken_from(request.user, pk)
    if round is None:
        raise Http404("No round matches the given query.")
    if request.method == "POST":
        return _taken(request, round, RoundAnswers(round, data=request.POST, tz=_tz()))
    return _taken(request, round, None, status=200)


def _taken(
    request: SignedInRequest, round: Round, answers: RoundAnswers | None, *, status: int = 409
) -> HttpResponse:
    """Who took (or closed) ``round`` and when, what this person typed (read back, nothing
    dropped), and where to go on: never a dead end."""
    call = round.call
    context = {
        "round": round,
        "call": call,
        "typed": typed_values(answers) if answers is not None else (),
        "may_see_call": sees_call(request.user, call),
        "server_name": _server_name(call.connection),
    }
    return render(request, "calls/taken.html", context, status=status)


def _tz() -> Any:
    return timezone.get_current_timezone()


def _server_name(conn: Connection) -> str:
    return str((conn.server_info().get("info") or {}).get("name", ""))


# A list shows none of these, and results can be big: the outcome reads ``result_is_error``.
LIST_DEFERRED = ("result", "arguments_json", "credentials", "tool")


# -- the call page -------------------------------------------------------------------------------


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
        "server_name": _server_name(call.connection),
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


@login_required
@require_POST
def retry_delivery(request: SignedInRequest, pk: int) -> HttpResponse:
    round = get_object_or_404(visible_rounds(request.user), pk=pk)
    if not can_answer(request.user, round):
        raise Http404("No round matches the given query.")
    try:
        engine.retry_delivery(round, request.user)
    except engine.EngineError:
        return render(
            request,
            "calls/conflict.html",
            {"call": round.call, "round": round, "problem": "not_retryable"},
            status=409,
        )
    return SeeOther(round.call.get_absolute_url())


# -- claiming a group's round ----------------------------------------------------------------


def _can_claim(user: User, round: Round) -> bool:
    return (
        round.is_pending
        and not round.split  # a split round's parts are answered, not claimed
        and round.assigned_group_id is not None
        and round.claimed_by_id is None
        and can_answer(user, round)
        # A quorum round stays with every approver: nobody takes it for themselves.
        and not is_quorum(round)
    )


def _can_release(user: User, round: Round) -> bool:
    """Admins release any claim; a member may give back the round they claimed."""
    if not (round.is_pending and round.claimed_by_id is not None):
        return False
    return is_admin(user) or (round.claimed_by_id == user.pk and can_answer(user, round))


def _next_or(request: HttpRequest, default: str) -> str:
    """The local page the form came from (``next``), else ``default``."""
    wanted = request.POST.get("next", "")
    if wanted and url_has_allowed_host_and_scheme(
        wanted, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return wanted
    return default


def _claim_conflict(request: SignedInRequest, round: Round, problem: str) -> HttpResponse:
    round.refresh_from_db()
    answers = RoundAnswers(round, consented=url_consent.consented(request, round), tz=_tz())
    return _render_round(request, round, answers, status=409, claim_problem=problem)


@login_required
@require_POST
def claim(request: HtmxRequest, pk: int) -> HttpResponse:
    """Take a group's round: it leaves the other members' inboxes."""
    round = by_key(visible_rounds(request.user), pk)
    if round is None or not can_answer(request.user, round):
        if request.htmx:
            return _claim_lost(request, pk)
        if round is None:
            return _taken_or_404(request, pk)
        raise Http404("No round matches the given query.")
    if round.claimed_by_id != request.user.pk:
        if not (round.is_pending and round.assigned_group_id is not None) or is_quorum(round):
            return (
                _claim_lost(request, pk)
                if request.htmx
                else _claim_conflict(request, round, "not_claimable")
            )
        try:
            engine.claim(round, request.user)
        except engine.AlreadyAnswered:
            if request.htmx:
                return _claim_lost(request, pk)
            round.refresh_from_db()
            return _taken(request, round, None)
    return SeeOther(_next_or(request, round.get_absolute_url()))


def _claim_lost(request: SignedInRequest, pk: int) -> HttpResponse:
    """From the inbox (htmx), a claim someone else won: say so and reload the list.

    htmx swaps nothing on an error status, so the Claim button would just do nothing. A
    member of the round's group is told who took it; anyone else gets the same words whether
    the round exists or not, so they tell nobody anything.
    """
    taken = taken_from(request.user, pk)
    taker = (taken.answered_by or taken.claimed_by) if taken is not None else None
    if taker is not None:
        messages.info(
            request,
            _("That round is no longer waiting for you: %(name)s took it.")
            % {"name": person_name(taker)},
        )
    else:
        messages.info(request, _("That round is no longer waiting for you: someone else took it."))
    return HttpResponseClientRefresh()


@login_required
@require_POST
def release(request: SignedInRequest, pk: int) -> HttpResponse:
    """Put a claimed round back into every member's inbox."""
    round = get_object_or_404(visible_rounds(request.user), pk=pk)
    if not (is_admin(request.user) or round.claimed_by_id == request.user.pk):
        raise Http404("No round matches the given query.")
    if not _can_release(request.user, round):
        return _claim_conflict(request, round, "not_released")
    try:
        engine.release(round, request.user)
    except engine.EngineError:
        return _claim_conflict(request, round, "not_released")
    return SeeOther(_next_or(request, round.get_absolute_url()))
