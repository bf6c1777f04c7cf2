"""Many sockets' checks at once (mrtrweb/live/batch.py, checks.py, layers.py): each socket gets
the answer it would get alone, and a batch costs a fixed number of queries, not four per socket.

The refusals themselves (sign-outs, expiry, deactivation, a second factor owed) are proven end to
end with real sockets in test_signouts.py; here one batch mixes them all.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from mrtrweb.live import batch
from mrtrweb.live.checks import people_now
from mrtrweb.live.layers import SweptInMemoryChannelLayer
from mrtrweb.people.roles import ADMINS, OPERATORS

# -- batch.py ------------------------------------------------------------------------------


async def test_checks_asked_together_run_in_one_call_each_with_its_own_result() -> None:
    calls: list[list[int]] = []

    def double(items: list[int]) -> list[int]:
        calls.append(list(items))
        return [2 * i for i in items]

    results = await asyncio.gather(*(batch.checked(double, i) for i in range(50)))

    assert results == [2 * i for i in range(50)]
    assert calls == [list(range(50))]


async def test_a_failing_check_fails_only_its_own_callers() -> None:
    def fails(items: list[int]) -> list[int]:
        raise ValueError("no")

    def works(items: list[int]) -> list[int]:
        return items

    outcomes = await asyncio.gather(
        batch.checked(fails, 1), batch.checked(works, 2), return_exceptions=True
    )

    assert isinstance(outcomes[0], ValueError)
    assert outcomes[1] == 2


async def test_checks_asked_while_a_batch_runs_go_in_the_next() -> None:
    sizes: list[int] = []

    def slow(items: list[int]) -> list[int]:
        sizes.append(len(items))
        time.sleep(0.05)
        return items

    first = asyncio.ensure_future(batch.checked(slow, 0))
    await asyncio.sleep(0.01)  # the first batch is on the database thread now
    rest = await asyncio.gather(*(batch.checked(slow, i) for i in range(1, 6)))

    assert await first == 0 and rest == [1, 2, 3, 4, 5]
    assert sizes == [1, 5]


# -- checks.py -----------------------------------------------------------------------------


def _session_key(user: Any, *, verified: bool = True, backend: str | None = None) -> str:
    client = Client()
    client.force_login(user, verified=verified, backend=backend)
    return str(client.cookies[settings.SESSION_COOKIE_NAME].value)


@pytest.mark.django_db
def test_one_batch_gives_each_socket_what_it_would_get_alone() -> None:
    User = get_user_model()
    plain = User.objects.create_user("plain", password="x")
    other = User.objects.create_user("other", password="x")
    gone = User.objects.create_user("gone", password="x")
    moved = User.objects.create_user("moved", password="x")
    admin = User.objects.create_user("admin", password="x")
    admin.groups.add(Group.objects.get(name=ADMINS))
    granted = User.objects.create_user("granted", password="x")
    granted.user_permissions.add(
        Permission.objects.get(content_type__app_label="servers", codename="manage_connections")
    )
    operator = User.objects.create_user("operator", password="x")
    operator.groups.add(Group.objects.get(name=OPERATORS))

    plain_key = _session_key(plain)
    items = [
        (plain_key, plain.pk),  # listens
        (plain_key, other.pk),  # another person's session
        ("no-such-session", plain.pk),
        (_session_key(gone), gone.pk),  # deactivated below
        (_session_key(moved), moved.pk),  # password changed below
        (_session_key(admin, verified=False), admin.pk),  # owes the code (group permission)
        (_session_key(granted, verified=False), granted.pk),  # owes it (own permission)
        (_session_key(operator), operator.pk),  # passed the code: listens
    ]
    User.objects.filter(pk=gone.pk).update(is_active=False)
    moved.set_password("changed")
    moved.save()

    together = people_now(items)
    alone = [people_now([item])[0] for item in items]

    def names(found: list[Any]) -> list[str | None]:
        return [user.username if user is not None else None for user in found]

    assert names(together) == ["plain", None, None, None, None, None, None, "operator"]
    assert names(alone) == names(together)


@pytest.mark.django_db
def test_a_batch_costs_the_same_queries_for_two_sockets_or_forty() -> None:
    User = get_user_model()
    users = [User.objects.create_user(f"p{i}", password="x") for i in range(40)]
    items = [(_session_key(user), user.pk) for user in users]

    with CaptureQueriesContext(connection) as two:
        assert all(people_now(items[:2]))
    with CaptureQueriesContext(connection) as forty:
        assert all(people_now(items))

    assert len(forty) == len(two) <= 3


@pytest.mark.django_db
def test_single_sign_on_sessions_are_checked_together_and_refuse_the_deactivated() -> None:
    """Their sessions name single sign-on's backend, whose reading of a person is the app's:
    read for the whole batch at once, and active people only (as a page reads them)."""
    User = get_user_model()
    users = [User.objects.create_user(f"sso{i}", password="x") for i in range(40)]
    sso = "mrtrweb.accounts.oidc.OidcBackend"
    items = [(_session_key(user, backend=sso), user.pk) for user in users]

    with CaptureQueriesContext(connection) as two:
        assert all(people_now(items[:2]))
    with CaptureQueriesContext(connection) as forty:
        assert all(people_now(items))
    assert len(forty) == len(two) <= 3

    User.objects.filter(pk=users[1].pk).update(is_active=False)
    assert [user is not None for user in people_now(items[:3])] == [True, False, True]


# -- layers.py -----------------------------------------------------------------------------


async def test_the_in_memory_layer_sweeps_at_most_once_an_interval_and_still_expires() -> None:
    layer = SweptInMemoryChannelLayer(expiry=0.05)
    layer.SWEEP_INTERVAL = 0.2
    unread = await layer.new_channel()
    await layer.group_add("watchers", unread)
    await layer.send(unread, {"type": "x"})
    await asyncio.sleep(0.1)  # expired, but swept only once the interval has passed

    await layer.group_send("watchers", {"type": "y"})  # sweeps: the first since it was made
    assert "watchers" not in layer.groups or unread not in layer.groups["watchers"]

    listener = await layer.new_channel()
    await layer.group_add("watchers", listener)
    await layer.send(listener, {"type": "z"})
    await asyncio.sleep(0.1)
    await layer.group_send("watchers", {"type": "again"})  # within the interval: no sweep
    assert listener in layer.groups["watchers"]

    await asyncio.sleep(0.2)
    await layer.group_send("watchers", {"type": "later"})  # swept: its old message expired
    assert listener not in layer.groups.get("watchers", {})
