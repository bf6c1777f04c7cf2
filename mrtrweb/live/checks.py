"""What a socket checks before it sends anything, for many sockets at once (``batch.py``).

:func:`people_now` decides, per ``(session key, person id)``, whether that person is still
signed in with that session, exactly as one socket alone would (Django's ``auth.get_user``,
without its side effects: it would flush a session whose password hash no longer matches; a
socket only listens), but reads the rows of every socket of the batch at once: the sessions in
one query, the users in one, their permissions (which decide whether a second factor is owed)
in one (``people.roles.load_permissions``, as a page's request reads them), where each socket
alone made four queries. :func:`sees_calls_now` asks
``calls.access`` per socket, as before.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from django.conf import settings
from django.contrib.auth import (
    BACKEND_SESSION_KEY,
    HASH_SESSION_KEY,
    SESSION_KEY,
    get_user_model,
    load_backend,
)
from django.contrib.auth.backends import ModelBackend
from django.utils import timezone
from django.utils.crypto import constant_time_compare

from mrtrweb.accounts.backends import AccountBackend
from mrtrweb.accounts.oidc import OidcBackend
from mrtrweb.accounts.second_factor import session_passed
from mrtrweb.people.roles import load_permissions


def _sessions(keys: set[str]) -> dict[str, dict[str, Any]]:
    """The data of each live session among ``keys``; a deleted or expired one is absent."""
    store = import_module(settings.SESSION_ENGINE).SessionStore
    get_model_class = getattr(store, "get_model_class", None)
    if get_model_class is None:
        # A session engine without a table (cache, cookies): each loads as Django loads it.
        return {key: dict(store(key).items()) for key in keys}
    # db and cached_db: the table is the truth (cached_db writes through), read as
    # SessionStore.load reads it: unexpired rows only, undecodable data as an empty session.
    rows = get_model_class().objects.filter(session_key__in=keys, expire_date__gt=timezone.now())
    decoder = store()
    pairs = rows.values_list("session_key", "session_data")
    return {key: decoder.decode(data) for key, data in pairs}


# ModelBackend's way of reading a person, and the app's (the same, in one statement with their
# permissions), which single sign-on's backend uses too.
_MODEL_BACKENDS_GET_USER = (ModelBackend.get_user, AccountBackend.get_user, OidcBackend.get_user)


def _users(wanted: dict[str, set[Any]]) -> dict[tuple[str, Any], Any]:
    """``(backend path, user id)`` -> the user that backend gives (None for none).

    ModelBackend's ``get_user`` (the user by primary key, if active) is done for all at once;
    any other backend is asked per user, as ``auth.get_user`` would."""
    found: dict[tuple[str, Any], Any] = {}
    for path, ids in wanted.items():
        # Any: a backend with ModelBackend's get_user has its user_can_authenticate too.
        backend: Any = load_backend(path)
        if type(backend).get_user in _MODEL_BACKENDS_GET_USER:
            users = get_user_model()._default_manager.filter(pk__in=ids)
            by_id = {user.pk: user for user in users}
            for user_id in ids:
                user = by_id.get(user_id)
                found[path, user_id] = (
                    user if user is not None and backend.user_can_authenticate(user) else None
                )
        else:
            for user_id in ids:
                found[path, user_id] = backend.get_user(user_id)
    return found


def people_now(items: list[tuple[str, Any]]) -> list[Any | None]:
    """Per ``(session key, person id)``: the person, still signed in with that session, or
    None (signed out, expired, another person, deactivated, password changed, or a second
    factor still owed)."""
    sessions = _sessions({key for key, _ in items})
    wanted: dict[str, set[Any]] = {}
    claims: list[tuple[dict[str, Any], str, Any] | None] = []
    for key, _ in items:
        session = sessions.get(key) or {}
        path = session.get(BACKEND_SESSION_KEY)
        if SESSION_KEY not in session or path not in settings.AUTHENTICATION_BACKENDS:
            claims.append(None)
            continue
        user_id = get_user_model()._meta.pk.to_python(session[SESSION_KEY])
        wanted.setdefault(path, set()).add(user_id)
        claims.append((session, path, user_id))
    users = _users(wanted)
    # ``session_passed`` asks ``has_perm`` of everyone who is not a superuser: one query for all.
    load_permissions(*(u for u in users.values() if u is not None))
    results: list[Any | None] = []
    for (_, person_id), claim in zip(items, claims, strict=True):
        if claim is None:
            results.append(None)
            continue
        session, path, user_id = claim
        user = users.get((path, user_id))
        if user is None or user.pk != person_id or not user.is_active:
            results.append(None)
            continue
        stored_hash = session.get(HASH_SESSION_KEY) or ""
        if not constant_time_compare(stored_hash, user.get_session_auth_hash()):
            results.append(None)  # the password changed: Django signs it out on its next page
        elif not session_passed(session, user):
            results.append(None)  # a second factor still owed: no page would show anything
        else:
            results.append(user)
    return results


def sees_calls_now(items: list[tuple[Any, int]]) -> list[bool]:
    """Per ``(user, call id)``: whether ``calls.access`` lets the user see the call."""
    from mrtrweb.calls.access import visible_calls

    return [visible_calls(user).filter(pk=call_id).exists() for user, call_id in items]


def watched_calls_now(items: list[tuple[Any, int]]) -> list[int | None]:
    """Per ``(user, call id)``: who started the call (their id) if ``calls.access`` lets the
    user see it, else None. A call's socket keeps it from its opening on, for
    :func:`sees_call_at_once`."""
    from mrtrweb.calls.access import visible_call

    found = [visible_call(user, call_id) for user, call_id in items]
    return [call.started_by_id if call is not None else None for call in found]


def sees_call_at_once(person: Any, started_by_id: int) -> bool:
    """Whether ``person`` (as :func:`people_now` gives them, their permissions read) may see
    the call ``started_by_id`` started with no query at all, on the event loop: they started
    it, or are an admin. False says only "ask the whole rule" (:func:`sees_calls_now`).

    Why: asking the whole access rule, built and compiled anew, before every frame, on a hop
    of its own to the database thread, would tell a person following their own call of its
    completion some 5 ms later (P4)."""
    from mrtrweb.calls.access import sees_call_at_once as seen
    from mrtrweb.people.roles import knows_roles

    return started_by_id == person.pk or (knows_roles(person) and seen(person, started_by_id))
