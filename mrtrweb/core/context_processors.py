"""What every page's header needs: the person's roles and how many rounds wait for them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import connection
from django.db.models import Q, QuerySet
from django.http import HttpRequest

from mrtrweb.calls.models import Round
from mrtrweb.people.roles import is_admin, is_operator


def people(request: HttpRequest) -> dict[str, Any]:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    return {
        "is_admin_role": is_admin(user),
        "is_operator_role": is_operator(user),
        # Lazy: evaluated only where the template shows it.
        "inbox_count": lambda: _waiting(user),
    }


# The header says "99+" beyond this: an exact count reads every waiting row, on every page
# (docs/performance.md, P3).
INBOX_COUNT_CAP = 99


def _waiting(user: Any) -> int | str:
    """How many rounds wait for ``user`` (``calls.access.routed_to``), up to the cap.

    Counted as two capped counts, theirs and their groups', because each is a short range of
    one index ((assigned_user, status), (assigned_group, status)); routed_to's OR of the two
    reads every pending round of everyone instead.
    """
    waiting = Round.objects.filter(status=Round.Status.PENDING).exclude(unsupported_reason__gt="")
    theirs = waiting.filter(assigned_user=user)
    groups = waiting.filter(assigned_group__in=user.groups.all()).filter(
        Q(claimed_by__isnull=True) | Q(claimed_by=user)
    )
    # Both counted every time, so every page costs the same queries; a round routed to both
    # the user and one of their groups is counted once.
    count = _capped_sum(
        rounds.order_by().values("pk")[: INBOX_COUNT_CAP + 1]
        for rounds in (theirs, groups.exclude(assigned_user=user))
    )
    return f"{INBOX_COUNT_CAP}+" if count > INBOX_COUNT_CAP else count


def _capped_sum(capped: Iterable[QuerySet[Any]]) -> int:
    """The sum of the row counts of ``capped`` (sliced querysets) in one query: each stays
    its own subquery, its own short index range, as ``.count()`` of each would read it, where
    running them one by one costs a round trip each on every page."""
    parts, params = [], []
    for rows in capped:
        sql, sql_params = rows.query.sql_with_params()
        parts.append(f"(SELECT COUNT(*) FROM ({sql}) capped)")
        params.extend(sql_params)
    with connection.cursor() as cursor:
        cursor.execute("SELECT " + " + ".join(parts), params)
        return int(cursor.fetchone()[0])
