"""Resuming what waited for an account: once it is connected, each waiting call's request is
sent, once.

``authorizations.signals.connected`` (after the tokens are committed) reaches
:func:`resume_authorized` through ``calls.receivers``. A person's account resumes their own
calls on the connection; the connection's own account (shared, client credentials) resumes
every call waiting on it. Clearing a call's wait is the claim: of two signals (or two
processes) only one clears it and queues the send, and the send itself is claimed again as
every send is (``submitted -> delivering`` for a round, ``sent_at`` for a first request).
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import transaction

from mrtrweb.servers.models import Connection

from .. import queue
from ..models import Call, Round
from .trail import record

__all__ = ["resume_authorized"]


def resume_authorized(connection: Connection, user: User | None) -> int:
    """Queue the waiting requests of ``user``'s calls on ``connection`` (every call's when the
    account is the connection's own: shared, client credentials). How many were queued."""
    waiting = Call.objects.filter(
        connection=connection, waiting_for_authorization_since__isnull=False
    )
    # A person's own account serves only their calls; the connection's serves every one.
    if user is not None and connection.auth == Connection.Auth.OAUTH_PERSON:
        waiting = waiting.filter(started_by=user)
    resumed = 0
    for call_id in waiting.values_list("pk", flat=True):
        resumed += _resume(call_id, user)
    return resumed


def _resume(call_id: int, user: User | None) -> int:
    with transaction.atomic():
        # The claim: only the one that clears the wait queues the send.
        if not Call.objects.filter(
            pk=call_id, waiting_for_authorization_since__isnull=False
        ).update(waiting_for_authorization_since=None, waiting_for_authorization_reason=""):
            return 0
        call = Call.objects.get(pk=call_id)
        if call.is_finished:
            return 0  # expired or cancelled while it waited: nothing to send
        round = call.rounds.filter(status=Round.Status.SUBMITTED).order_by("-index").first()
        record(call, "authorization_resumed", round=round, actor=user)
        if round is not None:
            queue.enqueue("deliver_round", round.pk)
        elif call.status == Call.Status.RUNNING and call.sent_at is None:
            queue.enqueue("send_call", call.pk)
    return 1
