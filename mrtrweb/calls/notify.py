"""Telling people a round waits for them (Django's email backend)."""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.core.mail import send_mass_mail

from mrtrweb.mcp.oneline import one_line

from .access import narrowed
from .models import RoundPart
from .presenting import person_name, present
from .waiting import headline, reconnect_url
from .when import moment_in_utc

# Subjects are headers: what a server sent (tool names, questions) is put on one line there, or
# Django refuses the whole email (BadHeaderError) and nobody is told.
SUBJECT_LENGTH = 200

logger = logging.getLogger(__name__)


def recipients(round: Any) -> list[str]:
    if round.assigned_user is not None:
        users = [round.assigned_user]
    elif round.assigned_group is not None:
        users = list(round.assigned_group.user_set.filter(is_active=True))
    else:
        users = []
    return sorted({u.email for u in users if u.email})


def notify_new_round(round: Any) -> None:
    """Email the assignee(s) a link to the round. A mail failure never fails the call.

    A split round's parts are told each to their own people, with their own questions only."""
    if round.unsupported_reason:
        return
    if getattr(round, "split", False):
        for part in RoundPart.objects.filter(round_id=round.pk).select_related(
            "assigned_user", "assigned_group"
        ):
            shown = narrowed(round, part)
            shown.assigned_user, shown.assigned_group = part.assigned_user, part.assigned_group
            _notify_new(shown)
        return
    _notify_new(round)


def _notify_new(round: Any) -> None:
    to = recipients(round)
    if not to:
        return
    call = round.call
    link = settings.MRTRWEB_BASE_URL.rstrip("/") + round.get_absolute_url()
    first_message = one_line(present(round).first_message, SUBJECT_LENGTH)
    server = call.connection.title or call.connection.name
    asker = person_name(call.started_by)
    subject = one_line(f"[mrtrweb] {asker} asks: {first_message or call.target}", SUBJECT_LENGTH)
    # Who asks, when, through what, and by when: what a person needs before opening the link.
    # No reader's zone is known here, so the times name their zone (UTC).
    lines = [
        f"{asker} started {call.get_method_display()} {call.target} on {server} "
        f"({moment_in_utc(call.created_at)}), and it needs your answer:",
        "",
        first_message,
        "",
        f"Answer it here: {link}",
    ]
    if round.answer_by:  # the renewal policy's deadline when it renews the server's state
        waited = (round.answer_by - round.created_at).total_seconds()
        minutes = max(0, int(waited / 60 + 0.5))  # 9 min 59.9 s reads as the 10 set
        lines += [
            "",
            f"Answer before {moment_in_utc(round.answer_by)} "
            f"({minutes} minute{'s' if minutes != 1 else ''} after it was asked).",
        ]
    body = "\n".join(lines) + "\n"
    try:
        # One message per person: members of a group do not see each other's addresses.
        send_mass_mail([(subject, body, None, [address]) for address in to])
    except Exception:  # an unreachable mail server must not lose the round
        logger.exception("could not email round %s to %s", round.pk, to)


def notify_expired(round: Any) -> None:
    """Email the assignee(s) that a round expired unanswered (or undelivered). Never raises."""
    to = recipients(round)
    if not to:
        return
    call = round.call
    link = settings.MRTRWEB_BASE_URL.rstrip("/") + call.get_absolute_url()
    subject = f"[mrtrweb] Expired: {call.connection} {call.get_method_display()} {call.target}"
    answered = bool(round.answers)
    body = (
        f"The question from {call.connection} for {call.get_method_display()} {call.target}, "
        f"asked by {person_name(call.started_by)}, expired before it could be "
        + ("sent to the server. The answers given are kept." if answered else "answered.")
        + f"\n\nStart the call again from: {link}\n"
    )
    subject = one_line(subject, SUBJECT_LENGTH)
    try:
        send_mass_mail([(subject, body, None, [address]) for address in to])
    except Exception:  # an unreachable mail server must not stop the sweep
        logger.exception("could not email the expiry of round %s to %s", round.pk, to)


def notify_reconnect(call: Any) -> None:
    """Email the person who must connect an account again for the call to go on: its caller
    (per-person accounts). Never raises; no token or server answer is in it."""
    user = call.started_by
    if call.connection.auth != call.connection.Auth.OAUTH_PERSON or not user.email:
        return
    base = settings.MRTRWEB_BASE_URL.rstrip("/")
    subject = one_line(
        f"[mrtrweb] Reconnect your account on {call.connection} to continue "
        f"{call.get_method_display()} {call.target}",
        SUBJECT_LENGTH,
    )
    body = (
        f"Your call {call.get_method_display()} {call.target} on {call.connection} is waiting: "
        f"{(call.waiting_for_authorization_reason or headline(call)).rstrip('.')}.\n\n"
        "Nothing was lost: any answers given are kept, and the call goes on by itself once you "
        f"reconnect your account here:\n{base}{reconnect_url(call)}\n\n"
        "If the server stops keeping the call's state before then, the call expires and must "
        f"be started again from: {base}{call.get_absolute_url()}\n"
    )
    try:
        send_mass_mail([(subject, body, None, [user.email])])
    except Exception:  # an unreachable mail server must not lose the call
        logger.exception("could not email call %s's caller to reconnect", call.pk)
