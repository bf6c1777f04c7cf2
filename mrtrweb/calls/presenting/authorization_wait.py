"""A call that waits for an account to be connected again, as pages and emails say it.

The engine parks a call's next request when the server refuses the caller's (or the
connection's) OAuth token and only a person can cure it (engine.outcomes.wait_for_authorization);
everyone who sees the call or its round is told who must reconnect, and the person who can is
offered the way: the connect page of the authorizations app, back to the call afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.models import User
from django.urls import NoReverseMatch, reverse
from django.utils.translation import gettext as _

from mrtrweb.people.roles import is_operator
from mrtrweb.servers.models import Connection

from ..models import Call

__all__ = ["AuthorizationWait", "authorization_wait", "reconnect_url"]


@dataclass(frozen=True)
class AuthorizationWait:
    """What the call page and round page show while a call waits for an account."""

    # For everyone who sees it: "Waiting for Ada Lovelace to reconnect their account on X".
    headline: str
    # The engine's words: why (never a token).
    reason: str
    # The connect page (back to the call afterwards), only for whoever can connect it.
    reconnect_url: str | None


def _name(user: User) -> str:
    return user.get_full_name() or user.get_username()


def headline(call: Call) -> str:
    server = str(call.connection)
    if call.connection.auth == Connection.Auth.OAUTH_PERSON:
        return _("Waiting for %(name)s to reconnect their account on %(server)s") % {
            "name": _name(call.started_by),
            "server": server,
        }
    return _("Waiting for an operator to reconnect the account of %(server)s") % {"server": server}


def reconnect_url(call: Call) -> str:
    """The page where the account is connected again, coming back to the call afterwards."""
    back = call.get_absolute_url()
    try:
        connect = reverse("authorizations:connect", kwargs={"connection": call.connection.name})
    except NoReverseMatch:
        # The authorizations pages are not installed: the call page says what to do.
        return back
    return f"{connect}?{urlencode({'next': back})}"


def can_reconnect(call: Call, user: User) -> bool:
    """The caller reconnects their own account; an operator the connection's."""
    if call.connection.auth == Connection.Auth.OAUTH_PERSON:
        return bool(user.is_authenticated and user.pk == call.started_by_id)
    return is_operator(user)


def authorization_wait(call: Call, viewer: Any) -> AuthorizationWait | None:
    """The wait to show ``viewer`` on the call's pages, None when the call does not wait."""
    if call.waiting_for_authorization_since is None or call.is_finished:
        return None
    return AuthorizationWait(
        headline=headline(call),
        reason=call.waiting_for_authorization_reason,
        reconnect_url=reconnect_url(call) if can_reconnect(call, viewer) else None,
    )
