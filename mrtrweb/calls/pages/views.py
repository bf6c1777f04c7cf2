"""The round pages: a round, retrying its delivery, claiming and releasing a group's round. Thin:
parse, authorise, render; the engine changes state.

Access is decided in :mod:`mrtrweb.calls.access` only; a call or round someone may not see
is a 404, exactly like one that does not exist.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRefresh
from django_htmx.middleware import HtmxDetails

from mrtrweb.http import SeeOther, SignedInRequest
from mrtrweb.people.roles import is_admin

from .. import engine
from ..access import (
    by_key,
    can_answer,
    next_page,
    readings,
    sees_call,
    shown_to,
    taken_from,
    visible_round,
    visible_rounds,
)
from ..models import Call, Round
from ..presenting.authorization_wait import authorization_wait
from ..presenting.policies import policy_states
from ..presenting.rounds import RoundAnswers, person_name, typed_values
from ..presenting.server_content import server_name
from . import url_consent
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
        "server_name": server_name(call.connection),
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
        "server_name": server_name(call.connection),
    }
    return render(request, "calls/taken.html", context, status=status)


def _tz() -> Any:
    return timezone.get_current_timezone()


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
