"""The one-query permission backend answers exactly as Django's own, with one query."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import Group, Permission

from mrtrweb.core.auth_backends import OneQueryModelBackend

pytestmark = pytest.mark.django_db


def _perm(label: str) -> Permission:
    app, codename = label.split(".")
    return Permission.objects.get(content_type__app_label=app, codename=codename)


@pytest.fixture
def users() -> dict[str, Any]:
    User = get_user_model()
    admins = Group.objects.create(name="round admins")
    admins.permissions.add(_perm("calls.manage_rounds"))
    both = User.objects.create_user("both", password="pw-both-123")
    both.user_permissions.add(_perm("servers.manage_connections"))
    both.groups.add(admins)
    grouped = User.objects.create_user("grouped", password="pw-grouped-123")
    grouped.groups.add(admins)
    direct = User.objects.create_user("direct", password="pw-direct-123")
    direct.user_permissions.add(_perm("servers.manage_connections"))
    none = User.objects.create_user("none", password="pw-none-123")
    inactive = User.objects.create_user("inactive", password="pw-x-123", is_active=False)
    inactive.groups.add(admins)
    root = User.objects.create_superuser("root", password="pw-root-123")
    return {u.username: u for u in (both, grouped, direct, none, inactive, root)}


def _fresh(user: Any) -> Any:
    return get_user_model().objects.get(pk=user.pk)


def test_the_same_permissions_as_djangos_backend(users: dict[str, Any]) -> None:
    for user in users.values():
        ours = OneQueryModelBackend().get_all_permissions(_fresh(user))
        django = ModelBackend().get_all_permissions(_fresh(user))
        assert ours == django, user.username
    assert OneQueryModelBackend().get_all_permissions(_fresh(users["both"])) == {
        "calls.manage_rounds",
        "servers.manage_connections",
    }
    assert OneQueryModelBackend().get_all_permissions(_fresh(users["inactive"])) == set()


def test_one_query_then_none(users: dict[str, Any], django_assert_num_queries: Any) -> None:
    user = _fresh(users["both"])
    with django_assert_num_queries(1):
        assert user.has_perm("calls.manage_rounds")
        assert user.has_perm("servers.manage_connections")
        assert not user.has_perm("auth.delete_user")


@pytest.mark.django_db(transaction=True)
async def test_the_async_variant_agrees(users: dict[str, Any]) -> None:
    from asgiref.sync import sync_to_async

    user = await sync_to_async(_fresh)(users["grouped"])
    assert await user.ahas_perm("calls.manage_rounds")
    assert not await user.ahas_perm("servers.manage_connections")
