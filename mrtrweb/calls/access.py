"""Who may see a call and answer its rounds: the one place the pages ask.

For now a call belongs to the person who started it, and staff see and answer everything.
Routing rounds to other people (issue 4) changes these functions and nothing else.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from .models import Call, Round


def visible_calls(user: Any) -> QuerySet[Call]:
    """The calls ``user`` may look at."""
    if not getattr(user, "is_authenticated", False) or not user.is_active:
        return Call.objects.none()
    calls = Call.objects.select_related("connection", "started_by")
    if user.is_staff:
        return calls
    return calls.filter(started_by=user)


def visible_rounds(user: Any) -> QuerySet[Round]:
    """The rounds ``user`` may look at: those of the calls they may see."""
    return Round.objects.select_related(
        "call__connection", "call__started_by", "answered_by"
    ).filter(call__in=visible_calls(user).values("pk"))


def can_answer(user: Any, round: Round) -> bool:
    """Whether ``user`` may answer (or abandon) ``round``."""
    return visible_calls(user).filter(pk=round.call_id).exists()


def can_act_on_call(user: Any, call: Call) -> bool:
    """Whether ``user`` may restart ``call`` or retry the delivery of its rounds."""
    return visible_calls(user).filter(pk=call.pk).exists()
