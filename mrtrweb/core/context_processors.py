"""What every page's header needs: the person's roles and how many rounds wait for them."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.db.models import Q
from django.http import HttpRequest

from mrtrweb.calls.access import waiting_ways
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


# What the header counts of a person's waiting rounds: pending, with a form this app can show.
# Built once: it depends on nobody.
_SHOWN = Q(status=Round.Status.PENDING) & ~Q(unsupported_reason__gt="")

# The header says "99+" beyond this: an exact count reads every waiting row, on every page
# (docs/performance.md, P3).
INBOX_COUNT_CAP = 99


def _waiting(user: User) -> int | str:
    """How many rounds wait for ``user``, up to the cap: what their inbox lists
    (``calls.access.waiting_for``: theirs, their groups' that nobody else claimed, the rounds
    they stand in for now and those handed to someone standing in for them, split rounds with
    a part waiting for them), less the rounds with a form this app cannot show.

    One query: the ``UNION`` of one capped branch per way of being routed
    (``calls.access.waiting_ways``, the same terms one way at a time), its keys counted, because
    ``waiting_for``'s OR of them reads every pending round of everyone instead; the union
    counts a round routed more than one way once. Every way is asked every time, so every page
    costs the same.
    """
    # Each branch capped in a subquery of its own (SQLite takes no LIMIT on a member of a
    # compound SELECT); more than the cap in any branch is more than the cap in all.
    rounds = Round.objects.order_by().values_list("pk", flat=True)
    first, *rest = (
        rounds.filter(pk__in=keys[: INBOX_COUNT_CAP + 1]) for keys in waiting_ways(user, _SHOWN)
    )
    # The keys themselves, counted here: a few hundred at most (one cap per branch), where
    # ``count()`` clones every branch twice more to wrap the union in an aggregate.
    count = len(first.union(*rest))
    return f"{INBOX_COUNT_CAP}+" if count > INBOX_COUNT_CAP else count
