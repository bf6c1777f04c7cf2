"""One lookup of a person's permissions per request (people/roles.py ``load_permissions``):
the same set Django's ModelBackend reads in two queries, in one, and nothing kept past the
request (the user object): a permission taken away counts on the next request."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import Permission
from django.db import connection
from django.test.utils import CaptureQueriesContext

from mrtrweb.accounts.backends import AccountBackend
from mrtrweb.people.roles import ADMINS, OPERATORS, is_admin, is_operator, load_permissions
from tests.support.factories import make_user

pytestmark = pytest.mark.django_db


def _fresh(user: Any) -> Any:
    return get_user_model().objects.get(pk=user.pk)


def test_one_query_gives_what_model_backend_gives() -> None:
    person = make_user("pat", ADMINS)
    person.user_permissions.add(Permission.objects.get(codename="view_connection"))
    expected = ModelBackend().get_all_permissions(_fresh(person))
    assert "calls.manage_rounds" in expected and "servers.view_connection" in expected

    user = _fresh(person)
    with CaptureQueriesContext(connection) as queries:
        load_permissions(user)
        assert is_admin(user) and not is_operator(user)
        assert user.has_perm("servers.view_connection")
        assert user.get_all_permissions() == expected
    assert len(queries) == 1


def test_nothing_outlives_the_request() -> None:
    person = make_user("pat", OPERATORS)
    assert is_operator(_fresh(person))
    person.groups.clear()
    assert not is_operator(_fresh(person))  # the next request's user object reads again


def test_superusers_and_inactive_people_are_not_looked_up() -> None:
    boss = get_user_model().objects.create_superuser("boss", password="pw-boss-123")
    gone = make_user("gone", ADMINS, is_active=False)
    with CaptureQueriesContext(connection) as queries:
        assert is_admin(boss) and not is_admin(gone)
    assert len(queries) == 0


def test_a_batch_reads_everyone_s_in_one_query_as_model_backend_does() -> None:
    admin = make_user("ada", ADMINS)
    operator = make_user("otto", OPERATORS)
    granted = make_user("gus")
    granted.user_permissions.add(Permission.objects.get(codename="view_connection"))
    both = make_user("bo", ADMINS)
    both.user_permissions.add(Permission.objects.get(codename="manage_connections"))
    plain = make_user("pia")
    people = [_fresh(p) for p in (admin, operator, granted, both, plain)]
    backend = ModelBackend()
    expected = [
        (
            backend.get_user_permissions(_fresh(p)),
            backend.get_group_permissions(_fresh(p)),
            backend.get_all_permissions(_fresh(p)),
        )
        for p in people
    ]

    with CaptureQueriesContext(connection) as queries:
        load_permissions(*people)
        # The app's backends answer from what was read (ModelBackend's own methods).
        ours = AccountBackend()
        got = [
            (
                ours.get_user_permissions(p),
                ours.get_group_permissions(p),
                ours.get_all_permissions(p),
            )
            for p in people
        ]
        load_permissions(*people)  # already read: nothing more
    assert len(queries) == 1
    assert got == expected
    assert [is_admin(p) for p in people] == [True, False, False, True, False]
    assert [is_operator(p) for p in people] == [False, True, False, True, False]


def test_a_role_is_asked_of_the_backends_once_per_user_object(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A page asks who its person is a dozen times; each has_perm made every backend anew.
    person = make_user("pat", ADMINS)
    user = _fresh(person)
    asked: list[str] = []
    has_perm = type(user).has_perm
    monkeypatch.setattr(
        type(user),
        "has_perm",
        lambda self, perm, obj=None: asked.append(perm) or has_perm(self, perm, obj),
    )
    for _ in range(5):
        assert is_admin(user) and not is_operator(user)
    assert asked == ["calls.manage_rounds", "servers.manage_connections"]
    # Deactivated on the object itself (signed out mid-request): no role, at once.
    user.is_active = False
    assert not is_admin(user) and not is_operator(user)
