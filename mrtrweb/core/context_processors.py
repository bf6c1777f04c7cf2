"""What every page's header needs: the person's roles and how many rounds wait for them."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import connections, router
from django.http import HttpRequest
from django.utils import timezone

from mrtrweb.calls.models import Call, Round, RoundPart
from mrtrweb.people.roles import is_admin, is_operator
from mrtrweb.policies.models import Delegation


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


def _waiting(user: User) -> int | str:
    """How many rounds wait for ``user``, up to the cap: what their inbox lists
    (``calls.access.waiting_for``: theirs, their groups' that nobody else claimed, the rounds
    they stand in for now and those handed to someone standing in for them, split
    rounds with a part waiting for them), less the rounds with a form this app cannot show.

    Counted as one capped ``UNION`` of short index ranges, one a way of being routed, because
    ``waiting_for``'s OR of them reads every pending round of everyone instead; the union
    counts a round routed more than one way once. Every way is asked every time, so every page
    costs the same.
    """
    alias = router.db_for_read(Round)
    ops = connections[alias].ops
    now = ops.adapt_datetimefield_value(timezone.now())
    limit = INBOX_COUNT_CAP + 1
    me = user.pk
    waiting = [Round.Status.PENDING, ""]
    whole, split = [*waiting, False], [*waiting, True]
    params: list[Any] = [
        *whole, me, limit,  # theirs
        *whole, me, me, limit,  # their groups', unclaimed or claimed by them
        *whole, now, now, me, bool(user.is_active), now, now, me, limit,  # they stand in for
        *whole, me, limit,  # handed to someone standing in for them
        RoundPart.Status.PENDING, me, *split, limit,  # a part theirs
        RoundPart.Status.PENDING, me, *split, limit,  # a part their groups'
    ]  # fmt: skip
    with connections[alias].cursor() as cursor:
        cursor.execute(_waiting_sql(alias), params)
        count = int(cursor.fetchone()[0])
    return f"{INBOX_COUNT_CAP}+" if count > INBOX_COUNT_CAP else count


@cache
def _waiting_sql(alias: str) -> str:
    """:func:`_waiting`'s statement: each way a round waits for a person its own capped
    branch of a ``UNION`` (each a short range of one index: the rounds' assignee, group and
    delegator indexes, the parts' assignee and group indexes), counted in one round trip.

    Written out rather than built with the ORM, which compiles the filtered querysets and their
    subqueries anew on every page, for every signed-in person: that would be most of what the
    count costs (0.9 ms of CPU against 0.1 ms). ``tests/core/test_inbox_count.py`` holds it to
    the ORM's definition (``waiting_for``) in every routing. Its parameters, branch by branch:
    the round's status, the empty reason and whether it is split, then the branch's own (see
    :func:`_waiting`; a part's status and person first), then the cap."""
    # Any: it quotes concrete fields' columns, which django-stubs types as optional.
    quote: Callable[[Any], str] = connections[alias].ops.quote_name
    rounds, parts = Round._meta, RoundPart._meta
    users = get_user_model()
    delegations = Delegation._meta

    def column(meta: Any, name: str, table: str) -> str:
        return f"{table}.{quote(meta.get_field(name).column)}"

    membership = users.groups.field
    groups = (
        f"SELECT m.{quote(membership.m2m_reverse_name())} "
        f"FROM {quote(membership.m2m_db_table())} m "
        f"WHERE m.{quote(membership.m2m_column_name())} = %s"
    )

    def r(name: str) -> str:
        return column(rounds, name, "r")

    def d(name: str, table: str = "d") -> str:
        return column(delegations, name, table)

    # delegating_to: running now, to them, they active, and no later one of the same person.
    later = (
        f"SELECT 1 FROM {quote(delegations.db_table)} l "
        f"WHERE {d('starts_at', 'l')} <= %s AND {d('until', 'l')} > %s "
        f"AND {d('person', 'l')} = {d('person')} "
        f"AND ({d('starts_at', 'l')} > {d('starts_at')} "
        f"OR ({d('starts_at', 'l')} = {d('starts_at')} AND l.{quote(delegations.pk.column)} "
        f"> d.{quote(delegations.pk.column)}))"
    )
    # Whether the delegate is active is a parameter: it is the person asking.
    stands_in_for = (
        f"SELECT {d('person')} FROM {quote(delegations.db_table)} d "
        f"WHERE {d('starts_at')} <= %s AND {d('until')} > %s AND {d('delegate')} = %s "
        f"AND %s AND NOT EXISTS ({later})"
    )
    waiting = (
        f"SELECT r.{quote(rounds.pk.column)} AS id FROM {quote(rounds.db_table)} r "
        f"WHERE {r('status')} = %s AND NOT ({r('unsupported_reason')} > %s) "
        f"AND {r('split')} = %s"
    )
    claimant = r("claimed_by")
    calls = Call._meta
    own_call = (
        f"SELECT 1 FROM {quote(calls.db_table)} c "
        f"WHERE c.{quote(calls.pk.column)} = {r('call')} "
        f"AND {column(calls, 'started_by', 'c')} IN ({r('assigned_user')}, %s)"
    )

    def p(name: str) -> str:
        return column(parts, name, "p")

    def by_part(who: str) -> str:
        # Led by the parts (their assignee or group index), each part's round looked up by
        # its key: with the round's columns in the outer query, SQLite without statistics
        # reads every pending round to match them against the parts' list.
        return (
            f"SELECT {p('round')} AS id FROM {quote(parts.db_table)} p "
            f"WHERE {p('status')} = %s AND {who} AND EXISTS ({waiting} "
            f"AND r.{quote(rounds.pk.column)} = {p('round')})"
        )

    branches = [
        f"{waiting} AND {r('assigned_user')} = %s",
        f"{waiting} AND {r('assigned_group')} IN ({groups}) "
        f"AND ({claimant} IS NULL OR {claimant} = %s)",
        # Not a round they hold as someone's stand-in, nor one of a call either started.
        f"{waiting} AND {r('assigned_user')} IN ({stands_in_for}) "
        f"AND {r('delegated_from')} IS NULL AND NOT EXISTS ({own_call})",
        f"{waiting} AND {r('delegated_from')} = %s",
        by_part(f"{p('assigned_user')} = %s"),
        by_part(f"{p('assigned_group')} IN ({groups})"),
    ]
    # Each branch capped inside a subquery of its own (SQLite takes no LIMIT on a member of a
    # compound SELECT itself); more than the cap in any branch is more than the cap in all.
    union = " UNION ".join(
        f"SELECT id FROM ({branch} LIMIT %s) b{n}" for n, branch in enumerate(branches)
    )
    return f"SELECT COUNT(*) FROM ({union}) capped"
