"""Closing a person's open sockets when they may no longer listen.

A socket is checked when it opens; what happens to its session afterwards must reach it too.
Each consumer joins ``session.<hash of its session key>`` and ``user.<id>.sockets``
(``events.session_group``, ``events.user_sockets_group``), and these receivers send those
groups a ``sockets.close`` message, which the consumers answer by closing with 4401:

- the person signs out (``user_logged_out``, whatever the session engine);
- the session is deleted: flushed (sign-out, another person signing in on it, a failed session
  check), its key cycled, or cleared (``post_delete`` of the session model, for the database
  session engines);
- the person is deactivated or deleted (``post_save`` with ``is_active`` off, ``post_delete``).

Messages go through the channel layer after the change commits, so they reach sockets held by
any process when the layer is Redis. Whatever no signal announces (a session that just
expires, a password set outside the pages, a bulk ``update()``) the consumers find out by checking
the session again before each thing they send (``consumers.PersonSocket``).
"""

from __future__ import annotations

import logging
from importlib import import_module
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model, user_logged_out
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models.signals import post_delete, post_save

from .events import publish, session_group, user_sockets_group

logger = logging.getLogger(__name__)

CLOSE = {"type": "sockets.close"}


def close_sockets(group: str) -> None:
    """Close every socket in ``group`` once the current transaction commits."""

    def send() -> None:
        try:
            publish([(group, CLOSE)])
        except Exception:
            # The consumers check again before sending anything; signing out must go on.
            logger.exception("could not close the sockets of %s", group)

    transaction.on_commit(send)


def on_logged_out(sender: Any, request: Any = None, user: User | None = None, **_: Any) -> None:
    session_key = getattr(getattr(request, "session", None), "session_key", None)
    if session_key:
        close_sockets(session_group(session_key))


def on_session_deleted(sender: Any, instance: Any, **_: Any) -> None:
    close_sockets(session_group(instance.session_key))


def on_user_saved(sender: Any, instance: Any, created: bool = False, **_: Any) -> None:
    if not created and not instance.is_active:
        close_sockets(user_sockets_group(instance.pk))


def on_user_deleted(sender: Any, instance: Any, **_: Any) -> None:
    close_sockets(user_sockets_group(instance.pk))


def session_model() -> Any | None:
    """The model of the configured session engine, if it keeps sessions in the database."""
    store = import_module(settings.SESSION_ENGINE).SessionStore
    get_model_class = getattr(store, "get_model_class", None)
    return get_model_class() if get_model_class is not None else None


def connect() -> None:
    """Subscribe the receivers (``LiveConfig.ready``)."""
    user_logged_out.connect(on_logged_out, dispatch_uid="mrtrweb.live.signouts")
    User = get_user_model()
    post_save.connect(on_user_saved, sender=User, dispatch_uid="mrtrweb.live.signouts")
    post_delete.connect(on_user_deleted, sender=User, dispatch_uid="mrtrweb.live.signouts")
    model = session_model()
    if model is not None:
        post_delete.connect(
            on_session_deleted, sender=model, dispatch_uid="mrtrweb.live.signouts.session"
        )
