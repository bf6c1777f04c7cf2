"""The session store: Django's database one; and ending a person's other sessions when
their password changes (:func:`end_other_sessions`).

The same table, rows and cookie as ``django.contrib.sessions.backends.db``: switching to it (or
back) signs nobody out. A session signed in through Django's ``ModelBackend`` is read as signed
in through the app's (:mod:`mrtrweb.accounts.backends`, the same backend), which replaced it.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import BACKEND_SESSION_KEY, SESSION_KEY
from django.contrib.auth.models import User
from django.contrib.sessions.backends.db import SessionStore as DatabaseSessionStore
from django.contrib.sessions.models import Session

from . import backends


class SessionStore(DatabaseSessionStore):
    def decode(self, session_data: bytes | str) -> dict[str, Any]:
        session = super().decode(session_data)
        # Signed in before the app's own backend (the same one).
        if session.get(BACKEND_SESSION_KEY) == backends.DJANGOS:
            session[BACKEND_SESSION_KEY] = backends.OURS
        return session


def end_other_sessions(user: User, keep: str | None) -> int:
    """Delete every session ``user`` is signed in with, but ``keep`` (the session of the
    request that changed the password); how many ended.

    Django would refuse those sessions at their next request (their password hash is stale),
    but an open socket makes no request: deleting the rows closes their sockets at once
    (``live.signouts``, on the session model's ``post_delete``). Sessions are not indexed by
    person, so each is read; this runs only when a password changes."""
    person = str(user.pk)
    ended = [
        session.session_key
        for session in Session.objects.exclude(session_key=keep or "").iterator()
        if str(session.get_decoded().get(SESSION_KEY)) == person
    ]
    # One row at a time through the ORM, so post_delete is sent for each.
    Session.objects.filter(session_key__in=ended).delete()
    return len(ended)
