"""The app's sign-in backend (mrtrweb/accounts/backends.py): Django's ModelBackend, the person
read on every signed-in request with their permissions, in one statement written once. Same
people, same refusals, same permissions, the same statement each time; and nobody signed in
through Django's own backend before it is signed out."""

from __future__ import annotations

from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import Permission
from django.contrib.sessions.backends.db import SessionStore as DatabaseSessionStore
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from mrtrweb.accounts import backends
from mrtrweb.accounts.backends import AccountBackend
from mrtrweb.accounts.sessions import SessionStore
from mrtrweb.live.checks import people_now
from mrtrweb.people import roles
from mrtrweb.people.roles import ADMINS, OPERATORS, is_admin, is_operator
from tests.support.factories import make_user

pytestmark = pytest.mark.django_db


def test_the_same_person_as_djangos_backend_or_none(monkeypatch: pytest.MonkeyPatch) -> None:
    ada = make_user("ada", first_name="Ada", email="ada@example.org")
    paused = make_user("paused", is_active=False)
    ours, djangos = AccountBackend(), ModelBackend()
    for user_id in (ada.pk, paused.pk, paused.pk + 1000):
        expected = djangos.get_user(user_id)
        with CaptureQueriesContext(connection) as read:
            got = ours.get_user(user_id)
        assert len(read.captured_queries) == 1
        if expected is None:
            assert got is None
            continue
        assert got is not None
        for field in type(ada)._meta.concrete_fields:
            assert getattr(got, field.attname) == getattr(expected, field.attname), field.name
    # The statement is compiled once, then sent with each key.
    from django.db.models.sql.compiler import SQLCompiler

    compiled: list[Any] = []
    as_sql = SQLCompiler.as_sql
    monkeypatch.setattr(
        SQLCompiler, "as_sql", lambda self, *a, **k: compiled.append(1) or as_sql(self, *a, **k)
    )
    assert ours.get_user(ada.pk) == ada
    assert ours.get_user(paused.pk) is None
    assert compiled == []
    # A key of another kind is Django's own way.
    assert ours.get_user(str(ada.pk)) == ada


def test_the_person_comes_with_their_permissions_as_model_backend_gives_them() -> None:
    """One statement gives the person and their permissions, their own and their groups':
    asking for them afterwards (the second-factor check, a page's menus) reads nothing."""
    view_connection = Permission.objects.get(codename="view_connection")
    admin = make_user("ada", ADMINS)
    both = make_user("bo", ADMINS, OPERATORS)
    both.user_permissions.add(view_connection)  # also one of Operators': counted once
    granted = make_user("gus")
    granted.user_permissions.add(view_connection)
    nobody = make_user("nia")
    for person in (admin, both, granted, nobody):
        expected = ModelBackend()
        fresh = get_user_model().objects.get(pk=person.pk)
        wanted = (
            expected.get_all_permissions(fresh),
            expected.get_user_permissions(fresh),
            expected.get_group_permissions(fresh),
        )
        with CaptureQueriesContext(connection) as read:
            user = AccountBackend().get_user(person.pk)
            assert user == person
            got = (
                user.get_all_permissions(),
                AccountBackend().get_user_permissions(user),
                AccountBackend().get_group_permissions(user),
            )
            roles_ = (is_admin(user), is_operator(user))
        assert len(read.captured_queries) == 1, person
        assert got == wanted, person
        assert roles_ == (
            "calls.manage_rounds" in wanted[0],
            "servers.manage_connections" in wanted[0],
        )
    assert is_admin(AccountBackend().get_user(both.pk))
    assert is_operator(AccountBackend().get_user(both.pk))
    assert not is_admin(AccountBackend().get_user(granted.pk))


def test_a_permission_taken_away_counts_on_the_next_read() -> None:
    person = make_user("pat", ADMINS)
    before = AccountBackend().get_user(person.pk)
    person.groups.clear()
    assert is_admin(before)  # this request's object keeps what it read
    assert not is_admin(AccountBackend().get_user(person.pk))  # the next request's does not


def test_a_superuser_is_read_whole_and_has_every_permission() -> None:
    boss = get_user_model().objects.create_superuser("boss", password="pw-boss-123")
    user = AccountBackend().get_user(boss.pk)
    assert user == boss and user.is_superuser
    assert is_admin(user) and is_operator(user)
    # Not the superuser's own rows (none): every permission, as ModelBackend reads them.
    assert user.get_all_permissions() == ModelBackend().get_all_permissions(boss)
    assert len(user.get_all_permissions()) == Permission.objects.count()


def test_people_and_permissions_in_two_databases_are_read_as_django_does(
    settings: Any,
) -> None:
    class PermissionsElsewhere:
        def db_for_read(self, model: Any, **hints: Any) -> str | None:
            return "elsewhere" if model is Permission else None

    ada = make_user("ada")
    settings.DATABASE_ROUTERS = [PermissionsElsewhere()]
    assert not roles.reads_together()
    with CaptureQueriesContext(connection) as read:
        user = AccountBackend().get_user(ada.pk)
    assert user == ada and not hasattr(user, roles.KEPT)
    assert (
        len(read.captured_queries) == 1 and "auth_permission" not in read.captured_queries[0]["sql"]
    )
    settings.DATABASE_ROUTERS = []
    assert roles.reads_together()


def test_signing_in_stores_the_apps_backend() -> None:
    ada = make_user("ada")
    client = Client()
    done = client.post("/accounts/login/", {"username": "ada", "password": "pw-ada-123"})
    assert done.status_code == 302
    assert client.session[BACKEND_SESSION_KEY] == backends.OURS
    assert client.get("/inbox/").context["user"] == ada


def _signed_in_through_djangos(person: Any) -> str:
    """A session as Django's ModelBackend left it before the app had its own."""
    store = SessionStore()
    store[SESSION_KEY] = str(person.pk)
    store[BACKEND_SESSION_KEY] = backends.DJANGOS
    store[HASH_SESSION_KEY] = person.get_session_auth_hash()
    store.create()
    # Stored as written: Django's path, in the table.
    row = SessionStore.get_model_class().objects.get(session_key=store.session_key)
    assert DatabaseSessionStore().decode(row.session_data)[BACKEND_SESSION_KEY] == backends.DJANGOS
    return str(store.session_key)


def test_signed_in_through_djangos_backend_before_stays_signed_in() -> None:
    """Django's path is no longer a configured backend, so Django alone would sign these
    people out; their sessions are read as the app's backend's, page and live updates alike."""
    assert backends.DJANGOS not in settings.AUTHENTICATION_BACKENDS
    ada, bob = make_user("ada"), make_user("bob")
    key = _signed_in_through_djangos(ada)
    client = Client()
    client.cookies[settings.SESSION_COOKIE_NAME] = key
    page = client.get("/inbox/")
    assert page.status_code == 200
    assert page.context["user"] == ada
    assert client.session[BACKEND_SESSION_KEY] == backends.OURS
    assert people_now([(key, ada.pk), (key, bob.pk)]) == [ada, None]
    # Signed out is signed out all the same.
    client.post("/accounts/logout/")
    assert people_now([(key, ada.pk)]) == [None]
    assert client.get("/inbox/").status_code == 302
