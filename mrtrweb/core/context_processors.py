"""What every page's header needs: the person's roles and how many rounds wait for them."""

from __future__ import annotations

from functools import cache
from typing import Any

from django.contrib.auth import get_user_model
from django.db import connections, router
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
    reads every pending round of everyone instead. Both are counted every time, so every page
    costs the same; a round routed to both the person and one of their groups counts once.
    """
    alias = router.db_for_read(Round)
    limit = INBOX_COUNT_CAP + 1
    pending, none = Round.Status.PENDING, ""
    params = [pending, none, user.pk, limit, pending, none, user.pk, user.pk, user.pk, limit]
    with connections[alias].cursor() as cursor:
        cursor.execute(_waiting_sql(alias), params)
        count = int(cursor.fetchone()[0])
    return f"{INBOX_COUNT_CAP}+" if count > INBOX_COUNT_CAP else count


@cache
def _waiting_sql(alias: str) -> str:
    """:func:`_waiting`'s statement: each capped count its own subquery, its own short index
    range (as ``.count()`` of each would read it), summed in one round trip.

    Written out rather than built with the ORM, which compiled the two filtered querysets and
    their groups subquery anew on every page, for every signed-in person: most of what the
    count cost (0.9 ms of CPU against 0.1 ms; issue 18). Its parameters: status, the empty
    reason and the person twice over, then the cap; for the groups' half, the person as
    member, as claimant and as the assignee it leaves out."""
    quote = connections[alias].ops.quote_name
    meta = Round._meta

    def column(name: str) -> str:
        return "r." + quote(meta.get_field(name).column)

    membership = get_user_model().groups.field
    groups = (
        f"SELECT m.{quote(membership.m2m_reverse_name())} "
        f"FROM {quote(membership.m2m_db_table())} m "
        f"WHERE m.{quote(membership.m2m_column_name())} = %s"
    )
    waiting = (
        f"SELECT r.{quote(meta.pk.column)} FROM {quote(meta.db_table)} r "
        f"WHERE {column('status')} = %s AND NOT ({column('unsupported_reason')} > %s)"
    )
    assignee = column("assigned_user")
    theirs = f"{waiting} AND {assignee} = %s LIMIT %s"
    claimant = column("claimed_by")
    their_groups = (
        f"{waiting} AND {column('assigned_group')} IN ({groups}) "
        f"AND ({claimant} IS NULL OR {claimant} = %s) "
        f"AND ({assignee} IS NULL OR {assignee} <> %s) LIMIT %s"
    )
    return (
        f"SELECT (SELECT COUNT(*) FROM ({theirs}) capped)"
        f" + (SELECT COUNT(*) FROM ({their_groups}) capped)"
    )
