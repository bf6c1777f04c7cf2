"""The inbox: rounds waiting for me, and a history of what I answered and started.

Read-only pages. Claiming and answering are the calls app's views; the inbox only links and
posts to them. Every list is one query for its page (plus one count) however many rows it
shows: related rows come in by ``select_related`` and nothing in a row's template reaches
back to the database.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.core.paginator import Page, Paginator
from django.db.models import BooleanField, ExpressionWrapper, Q, QuerySet
from django.db.models.fields.json import KT
from django.db.models.functions import Coalesce, Substr
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.utils.cache import patch_vary_headers
from django.utils.functional import cached_property
from django.views.decorators.http import require_safe

from mrtrweb.calls.access import shown_to, waiting_for
from mrtrweb.calls.models import Call, Round
from mrtrweb.calls.presenting.outcome_badges import Outcome, outcomes_for, round_action
from mrtrweb.calls.presenting.policies import policy_states
from mrtrweb.calls.presenting.rounds import present
from mrtrweb.http import SignedInRequest, whole_number

PAGE_SIZE = 25
SNIPPET_CHARS = 200
# Lists count their rows only this far (or to the page after the one shown): an exact count
# reads every matching row, so a hundred thousand waiting rounds made every page slow.
COUNT_CAP = 1000

# Lists never show these, and they are big (catalogs, results) or encrypted (requestState,
# secrets, which would otherwise be decrypted for every row).
_CONNECTION_HEAVY = ("catalog", "bearer_token", "headers")
_CALL_HEAVY = ("arguments_json", "tool", "result", "error", "credentials")
_ROUND_HEAVY = (
    "request_state",
    *(f"call__{name}" for name in _CALL_HEAVY),
    *(f"call__connection__{name}" for name in _CONNECTION_HEAVY),
)


# -- queries ---------------------------------------------------------------------------------


def pending_rounds(user: User) -> QuerySet[Round]:
    """Pending rounds routed to ``user`` (theirs, or their groups' unclaimed; split rounds
    while a part of theirs waits), newest first."""
    return (
        Round.objects.filter(status=Round.Status.PENDING)
        .filter(waiting_for(user))
        .select_related(
            "call__connection",
            "call__started_by",
            "assigned_group",
            "assigned_user",
            "delegated_from",
        )
        .defer("answers", *_ROUND_HEAVY)
        .order_by("-created_at", "-id")
    )


def answered_rounds(user: User) -> QuerySet[Round]:
    """Rounds ``user`` answered (or cancelled, for admins), newest answer first."""
    return (
        Round.objects.filter(answered_by=user)
        .select_related("call__connection", "call__started_by", "assigned_group")
        .defer(*_ROUND_HEAVY)
        .annotate(
            call_is_error=ExpressionWrapper(
                Q(call__result__isError=True), output_field=BooleanField()
            )
        )
        .order_by("-answered_at", "-id")
    )


def started_calls(user: User) -> QuerySet[Call]:
    """Calls ``user`` started, newest first, with a short text of the result or the error.

    The snippets are cut in the database so a large result never leaves it for a list.
    """
    return (
        Call.objects.filter(started_by=user)
        .select_related("connection")
        .defer(*_CALL_HEAVY, *(f"connection__{name}" for name in _CONNECTION_HEAVY))
        .annotate(
            result_text=Substr(
                Coalesce(
                    KT("result__content__0__text"),
                    KT("result__messages__0__content__text"),
                    KT("result__contents__0__text"),
                ),
                1,
                SNIPPET_CHARS,
            ),
            result_is_error=ExpressionWrapper(Q(result__isError=True), output_field=BooleanField()),
            error_text=Substr("error", 1, SNIPPET_CHARS),
        )
        .order_by("-created_at", "-id")
    )


# -- rows ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PendingRow:
    round: Round
    question: str
    late: bool
    claimable: bool
    claimed_by_me: bool
    # A split round: the key of the part waiting for this person ("" for the unrouted rest).
    part: str | None = None
    # Each approval policy's state ("approvals 1 of 2"), calls.presenting.policies.policy_states.
    policy: tuple[str, ...] = ()
    # Delegations: the person I answer this round for, or the one who answers it for me.
    for_person: Any = None
    handed_to: Any = None


@dataclass(frozen=True)
class AnsweredRow:
    round: Round
    question: str
    action: str
    outcome: Outcome


@dataclass(frozen=True)
class StartedRow:
    call: Call
    outcome: Outcome


def _pending_row(round: Round, user: User, now: Any, policy: list[str]) -> PendingRow:
    part = None
    if round.split:
        # Only their part's questions, never another's (one query more for such a row).
        round = shown_to(user, round)
        part = round.part.key if hasattr(round, "part") else None
    group_round = round.assigned_group_id is not None and not round.split
    for_person = handed_to = None
    if round.assigned_user_id == user.pk:
        for_person = round.delegated_from
    elif round.assigned_user_id is not None and round.delegated_from_id == user.pk:
        handed_to = round.assigned_user
    elif round.assigned_user_id is not None and not round.split:
        for_person = round.assigned_user  # waited for them before they went away
    return PendingRow(
        for_person=for_person,
        handed_to=handed_to,
        round=round,
        part=part,
        question=present(round).headline,
        late=round.answer_by is not None and round.answer_by <= now,  # the person's deadline
        # A quorum round is never claimed: every approver must keep seeing it.
        claimable=group_round
        and round.claimed_by_id is None
        and not round.unsupported_reason
        and not policy,
        claimed_by_me=group_round and round.claimed_by_id == user.pk,
        policy=tuple(policy),
    )


# -- paging ----------------------------------------------------------------------------------


class CappedPaginator(Paginator):
    """A paginator whose count stops a little past the page asked for (``COUNT_CAP`` at
    least), so a page costs the same however many rows match. ``capped`` says there are more.
    """

    object_list: QuerySet[Any]

    def __init__(self, object_list: QuerySet[Any], per_page: int, number: int = 1) -> None:
        super().__init__(object_list, per_page)
        self.cap = max(COUNT_CAP, (min(number, 100_000) + 1) * per_page)

    @cached_property
    def count(self) -> int:
        queryset = self.object_list.order_by().values("pk")
        return min(queryset[: self.cap + 1].count(), self.cap + 1)

    @property
    def capped(self) -> bool:
        return self.count > self.cap


def page_asked(request: HttpRequest, name: str) -> int:
    """The page number the query asks for under ``name``; the first for anything else, as
    Django's ``get_page`` would do, but read once, so the count's cap and the page agree."""
    return whole_number(request.GET.get(name)) or 1


@dataclass(frozen=True)
class Pager:
    """Links to the neighbouring pages, keeping every other query parameter."""

    page: Page
    target: str
    previous_url: str
    next_url: str


def _pager(request: HttpRequest, page: Page, param: str, target: str) -> Pager:
    def url(number: int) -> str:
        query = request.GET.copy()
        query[param] = str(number)
        return f"{request.path}?{query.urlencode()}"

    return Pager(
        page=page,
        target=target,
        previous_url=url(page.previous_page_number()) if page.has_previous() else "",
        next_url=url(page.next_page_number()) if page.has_next() else "",
    )


def _partial_for(request: HttpRequest) -> str | None:
    """The id of the section htmx asked for, or None when the whole page is wanted."""
    htmx = getattr(request, "htmx", None)
    if not htmx or htmx.boosted or htmx.history_restore_request:
        return None
    return htmx.target


def _vary(response: HttpResponse) -> HttpResponse:
    # The same URL answers a whole page or a section, so caches must keep them apart.
    patch_vary_headers(response, ("HX-Request", "HX-Target"))
    return response


# -- pages -----------------------------------------------------------------------------------


@login_required
@require_safe
def index(request: SignedInRequest) -> HttpResponse:
    user = request.user
    number = page_asked(request, "page")
    page = CappedPaginator(pending_rounds(user), PAGE_SIZE, number).get_page(number)
    now = timezone.now()
    rounds = list(page)
    states = policy_states(rounds)
    context = {
        "tab": "pending",
        "rows": [_pending_row(r, user, now, states[r.pk]) for r in rounds],
        "pager": _pager(request, page, "page", "inbox-pending"),
    }
    if _partial_for(request) == "inbox-pending":
        return _vary(render(request, "inbox/_pending.html", context))
    return _vary(render(request, "inbox/index.html", context))


@login_required
@require_safe
def history(request: SignedInRequest) -> HttpResponse:
    user = request.user
    wanted = _partial_for(request)
    context: dict[str, Any] = {"tab": "history"}
    if wanted in (None, "history-answered"):
        number = page_asked(request, "answered")
        answered = CappedPaginator(answered_rounds(user), PAGE_SIZE, number).get_page(number)
        rounds = list(answered)
        for r in rounds:  # what the call's outcome needs of its (deferred) result
            r.call.result_is_error = r.call_is_error
        outcomes = outcomes_for([r.call for r in rounds])
        # A split round they sent last: only their own part's question and answer.
        rounds = [shown_to(user, r) if r.split else r for r in rounds]
        context["answered"] = [
            AnsweredRow(r, present(r).headline, round_action(r.answers), outcomes[r.call_id])
            for r in rounds
        ]
        context["answered_pager"] = _pager(request, answered, "answered", "history-answered")
    if wanted in (None, "history-started"):
        number = page_asked(request, "started")
        started = CappedPaginator(started_calls(user), PAGE_SIZE, number).get_page(number)
        calls = list(started)
        outcomes = outcomes_for(calls)
        context["started"] = [StartedRow(c, outcomes[c.pk]) for c in calls]
        context["started_pager"] = _pager(request, started, "started", "history-started")
    if wanted == "history-answered":
        return _vary(render(request, "inbox/_answered.html", context))
    if wanted == "history-started":
        return _vary(render(request, "inbox/_started.html", context))
    return _vary(render(request, "inbox/history.html", context))
