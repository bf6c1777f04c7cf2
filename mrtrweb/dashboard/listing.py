"""Filtering, searching, sorting and paging every round and every call, for the dashboard.

Built to stay fast at 100,000 rounds:

- the default view (pending, newest first) is a range scan of the ``(status, -created_at)``
  index; assignee and group filters use ``(assigned_user, status)`` and
  ``(assigned_group, status)``;
- a page is ``LIMIT size + 1`` rows (the extra row says whether there is a next page) and the
  total is counted only up to :data:`COUNT_CAP`, so neither grows with the table;
- every row's call, server and people come in the same query (``select_related``), and the
  columns no list shows (the requestState, results, the servers' secrets and catalogs) are
  never loaded.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django import forms
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db.models import Q, QuerySet
from django.utils import timezone

from mrtrweb.calls.models import Call, Round
from mrtrweb.calls.presenting.outcome_badges import with_error_flag
from mrtrweb.calls.presenting.rounds import present
from mrtrweb.http import whole_number
from mrtrweb.servers.models import Connection

PAGE_SIZE = 50
# Beyond this many matches the count says "more than"; counting further costs a full scan.
COUNT_CAP = 10_000
# A page number past this is nobody's real navigation, only an expensive OFFSET.
MAX_PAGE = 100_000

AGES = {
    "1h": timedelta(hours=1),
    "1d": timedelta(days=1),
    "7d": timedelta(days=7),
}
AGE_CHOICES = [
    ("", "any age"),
    ("1h", "older than 1 hour"),
    ("1d", "older than 1 day"),
    ("7d", "older than 7 days"),
]

# Sort key -> ORDER BY; the id breaks ties so pages never overlap or skip.
ROUND_ORDER: dict[str, tuple[str, ...]] = {
    "-created": ("-created_at", "-id"),
    "created": ("created_at", "id"),
    "deadline": ("expires_at", "id"),
    "-deadline": ("-expires_at", "-id"),
    "status": ("status", "-created_at", "-id"),
    "-status": ("-status", "-created_at", "-id"),
}
ROUND_SORT_CHOICES = [
    ("-created", "newest first"),
    ("created", "oldest first"),
    ("deadline", "deadline soonest"),
    ("-deadline", "deadline latest"),
    ("status", "status, A to Z"),
    ("-status", "status, Z to A"),
]
CALL_ORDER: dict[str, tuple[str, ...]] = {
    "-created": ("-created_at", "-id"),
    "created": ("created_at", "id"),
    "-finished": ("-finished_at", "-id"),
    "finished": ("finished_at", "id"),
    "status": ("status", "-created_at", "-id"),
    "-status": ("-status", "-created_at", "-id"),
}
CALL_SORT_CHOICES = [
    ("-created", "newest first"),
    ("created", "oldest first"),
    ("-finished", "finished latest"),
    ("finished", "finished earliest"),
    ("status", "status, A to Z"),
    ("-status", "status, Z to A"),
]
# The direction a column header sorts in when it is not the current sort.
FIRST_DIRECTION = {"created": "-created", "deadline": "deadline", "status": "status"}
FIRST_DIRECTION_CALLS = {"created": "-created", "finished": "-finished", "status": "status"}

# Fields no list page reads: never loaded, so never decrypted and never sent anywhere.
ROUND_LIST_DEFERRED = (
    "request_state",
    "answers",
    "call__arguments_json",
    "call__tool",
    "call__result",
    "call__error",
    "call__connection__bearer_token",
    "call__connection__headers",
    "call__connection__catalog",
)
CALL_LIST_DEFERRED = (
    "arguments_json",
    "tool",
    "result",
    "connection__bearer_token",
    "connection__headers",
    "connection__catalog",
)


def connections_for_choice() -> QuerySet[Connection]:
    return Connection.objects.only("pk", "name", "title").order_by("name")


class _ListFilters(forms.Form):
    server = forms.ModelChoiceField(
        queryset=Connection.objects.none(),
        to_field_name="name",
        required=False,
        empty_label="any server",
    )
    tool = forms.CharField(required=False, max_length=2000, label="Tool")
    q = forms.CharField(
        required=False,
        max_length=200,
        label="Search",
        widget=forms.TextInput(attrs={"type": "search"}),
    )
    age = forms.ChoiceField(choices=AGE_CHOICES, required=False)

    defaults: dict[str, str] = {}

    def __init__(self, query: Any) -> None:
        data = query.copy()
        for name, value in self.defaults.items():
            if not data.get(name):
                data[name] = value
        super().__init__(data)
        self.fields["server"].queryset = connections_for_choice()  # type: ignore[attr-defined]


class RoundFilters(_ListFilters):
    status = forms.ChoiceField(
        choices=[*Round.Status.choices, ("all", "any status")], required=False
    )
    assignee = forms.CharField(
        required=False, max_length=150, label="Assignee", help_text="A username."
    )
    group = forms.ModelChoiceField(
        queryset=Group.objects.order_by("name"),
        to_field_name="name",
        required=False,
        empty_label="any group",
    )
    sort = forms.ChoiceField(choices=ROUND_SORT_CHOICES, required=False)

    defaults = {"status": Round.Status.PENDING, "sort": "-created"}
    field_order = ["q", "status", "server", "tool", "assignee", "group", "age", "sort"]


class CallFilters(_ListFilters):
    status = forms.ChoiceField(choices=[("", "any status"), *Call.Status.choices], required=False)
    starter = forms.CharField(
        required=False, max_length=150, label="Started by", help_text="A username."
    )
    sort = forms.ChoiceField(choices=CALL_SORT_CHOICES, required=False)

    defaults = {"sort": "-created"}
    field_order = ["q", "status", "server", "tool", "starter", "age", "sort"]


def filtered_rounds(filters: RoundFilters) -> QuerySet[Round]:
    """The rounds ``filters`` select, in their order; nothing if the filters are invalid."""
    rounds = Round.objects.select_related(
        "call__connection",
        "call__started_by",
        "assigned_user",
        "assigned_group",
        "claimed_by",
        "answered_by",
    ).defer(*ROUND_LIST_DEFERRED)
    if not filters.is_valid():
        return rounds.none()
    data = filters.cleaned_data
    status = data.get("status") or Round.Status.PENDING
    if status != "all":
        rounds = rounds.filter(status=status)
    if data.get("server") is not None:
        rounds = rounds.filter(call__connection=data["server"])
    if data.get("tool"):
        rounds = rounds.filter(call__target=data["tool"].strip())
    if data.get("assignee"):
        rounds = rounds.filter(assigned_user__username=data["assignee"].strip())
    if data.get("group") is not None:
        rounds = rounds.filter(assigned_group=data["group"])
    if data.get("age") in AGES:
        rounds = rounds.filter(created_at__lte=timezone.now() - AGES[data["age"]])
    query = (data.get("q") or "").strip()
    if query:
        rounds = rounds.filter(Q(call__target__icontains=query) | Q(summary__icontains=query))
    return rounds.order_by(*ROUND_ORDER[data.get("sort") or "-created"])


def filtered_calls(filters: CallFilters) -> QuerySet[Call]:
    calls = with_error_flag(
        Call.objects.select_related("connection", "started_by").defer(*CALL_LIST_DEFERRED)
    )
    if not filters.is_valid():
        return calls.none()
    data = filters.cleaned_data
    if data.get("status"):
        calls = calls.filter(status=data["status"])
    if data.get("server") is not None:
        calls = calls.filter(connection=data["server"])
    if data.get("tool"):
        calls = calls.filter(target=data["tool"].strip())
    if data.get("starter"):
        calls = calls.filter(started_by__username=data["starter"].strip())
    if data.get("age") in AGES:
        calls = calls.filter(created_at__lte=timezone.now() - AGES[data["age"]])
    query = (data.get("q") or "").strip()
    if query:
        condition = Q(target__icontains=query) | Q(error__icontains=query)
        number = whole_number(query)
        if number is not None:
            condition |= Q(pk=number)
        calls = calls.filter(condition)
    return calls.order_by(*CALL_ORDER[data.get("sort") or "-created"])


@dataclass
class Page:
    items: list[Any]
    number: int
    size: int
    has_next: bool
    total: int  # counted up to COUNT_CAP + 1
    capped: bool

    @property
    def has_previous(self) -> bool:
        return self.number > 1

    @property
    def next_number(self) -> int:
        return self.number + 1

    @property
    def previous_number(self) -> int:
        return self.number - 1

    @property
    def num_pages(self) -> int | None:
        return None if self.capped else max(1, math.ceil(self.total / self.size))

    @property
    def start_index(self) -> int:
        return (self.number - 1) * self.size + 1 if self.items else 0

    @property
    def end_index(self) -> int:
        return (self.number - 1) * self.size + len(self.items)


def page_number(raw: Any) -> int:
    number = whole_number(raw)
    return 1 if number is None else min(max(number, 1), MAX_PAGE)


def paginate(queryset: QuerySet[Any], number: int, size: int = PAGE_SIZE) -> Page:
    """One page of ``queryset``: two queries, whatever the size of the table."""
    offset = (number - 1) * size
    rows = list(queryset[offset : offset + size + 1])
    total = queryset.order_by().values("pk")[: COUNT_CAP + 1].count()
    return Page(
        items=rows[:size],
        number=number,
        size=size,
        has_next=len(rows) > size,
        total=min(total, COUNT_CAP),
        capped=total > COUNT_CAP,
    )


def first_question(round: Round) -> str:
    """The first line of the first message a round asks, for a one-line summary; the first
    request's method and key when no request has a message."""
    presented = present(round)
    if presented.headline or not presented.questions:
        return presented.headline
    first = presented.questions[0]
    return f"{first.method or 'request'} ({first.key})"


def user_by_username(username: str) -> Any:
    return get_user_model().objects.filter(username=username.strip(), is_active=True).first()
