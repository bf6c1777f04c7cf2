"""One rule for usernames: two names that read the same belong to one account at most.

Django stores a username NFKC-normalised (``create_user`` and the user forms apply
``AbstractBaseUser.normalize_username``): a name in fullwidth letters is stored in plain
ones. And people read "Bob" and "bob" as one name. Every place that creates or renames an
account (the dashboard's invite, the admin site, single sign-on, ``ensure_admin``) asks
:func:`holder` before it writes. Signing in still matches the stored name exactly.
"""

from __future__ import annotations

import unicodedata
from typing import Any

from django.contrib.auth import get_user_model
from django.utils.translation import gettext_lazy as _

TAKEN = _(
    "Someone has this username already. It is taken by %(name)s: names that differ only in "
    "case or in the width of their letters are the same name."
)


def normalised(name: str) -> str:
    """``name`` as it is stored: NFKC, without the spaces around it."""
    return unicodedata.normalize("NFKC", name).strip()


def folded(name: str) -> str:
    """What two usernames must not share: normalised, case-folded, normalised again (folding
    can leave a string that NFKC changes)."""
    return unicodedata.normalize("NFKC", normalised(name).casefold())


def holder(name: str, *, other_than: Any = None) -> Any | None:
    """The account, other than ``other_than``, whose username folds as ``name`` does, if any.

    Compared here rather than by the database: its case-insensitive match knows ASCII only
    (SQLite) or no NFKC (either). Accounts are created rarely and people are few enough for
    one pass over their names.
    """
    people = get_user_model()
    wanted = folded(name)
    rows = people.objects.values_list("pk", people.USERNAME_FIELD)
    if other_than is not None and other_than.pk is not None:
        rows = rows.exclude(pk=other_than.pk)
    for pk, username in rows.iterator(chunk_size=2000):
        if folded(username) == wanted:
            return people.objects.get(pk=pk)
    return None


def refusal(name: str, *, other_than: Any = None) -> str | None:
    """Why ``name`` cannot be given to an account (``other_than`` renamed), or None."""
    taken = holder(name, other_than=other_than)
    if taken is None:
        return None
    return str(TAKEN) % {"name": taken.get_username()}
