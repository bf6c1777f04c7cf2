"""The app's sign-in backend (mrtrweb/accounts/backends.py): Django's ModelBackend, the person
read on every signed-in request compiled once. Same people, same refusals, the same statement
each time; and nobody signed in through Django's own backend before it is signed out."""

from __future__ import annotations

from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.auth.backends import ModelBackend
from django.contrib.sessions.backends.db import SessionStore as DatabaseSessionStore
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from mrtrweb.accounts import backends
from mrtrweb.accounts.backends import AccountBackend
from mrtrweb.accounts.sessions import SessionStore
from mrtrweb.live.checks import people_now
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
