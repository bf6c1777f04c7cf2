"""Telling people a round waits for them (Django's email backend), each in their own language
and time zone (``people.speaking.writing_to``), never the sender's or the worker's."""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.mail import send_mass_mail
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from mrtrweb.mcp.oneline import one_line
from mrtrweb.people.speaking import writing_to
from mrtrweb.people.when import moment_in_zone

from ..access import narrowed
from ..models import RoundPart
from ..presenting.authorization_wait import headline, reconnect_url
from ..presenting.rounds import person_name, present

# Subjects are headers: what a server sent (tool names, questions) is put on one line there, or
# Django refuses the whole email (BadHeaderError) and nobody is told.
SUBJECT_LENGTH = 200

logger = logging.getLogger(__name__)


def recipients(round: Any) -> list[Any]:
    """The people to email about ``round``: one per address, each with their preferences (the
    language and zone their email is written in)."""
    if round.assigned_user is not None:
        users = [round.assigned_user]
    elif round.assigned_group is not None:
        users = list(
            round.assigned_group.user_set.filter(is_active=True).select_related("preferences")
        )
    else:
        users = []
    by_address = {u.email: u for u in sorted(users, key=lambda u: u.pk) if u.email}
    return [by_address[address] for address in sorted(by_address)]


def _send(messages: list[tuple[str, str, None, list[str]]]) -> None:
    send_mass_mail(messages)


def _new_round_message(round: Any, user: User) -> tuple[str, str, None, list[str]]:
    """The email to ``user`` about ``round``, in their language and time zone."""
    call = round.call
    link = settings.MRTRWEB_BASE_URL.rstrip("/") + round.get_absolute_url()
    with writing_to(user):
        first_message = one_line(present(round).first_message, SUBJECT_LENGTH)
        server = call.connection.title or call.connection.name
        asker = person_name(call.started_by)
        subject = one_line(
            _("[mrtrweb] %(asker)s asks: %(question)s")
            % {"asker": asker, "question": first_message or call.target},
            SUBJECT_LENGTH,
        )
        # Who asks, when, through what, and by when: what a person needs before opening the
        # link. The times in the recipient's zone, named (an email has no tooltip).
        lines = [
            _(
                "%(asker)s started %(kind)s %(target)s on %(server)s (%(when)s), and it needs "
                "your answer:"
            )
            % {
                "asker": asker,
                "kind": call.get_method_display(),
                "target": call.target,
                "server": server,
                "when": moment_in_zone(call.created_at),
            },
            "",
            first_message,
            "",
            _("Answer it here: %(link)s") % {"link": link},
        ]
        if round.answer_by:  # the renewal policy's deadline when it renews the server's state
            waited = (round.answer_by - round.created_at).total_seconds()
            minutes = max(0, int(waited / 60 + 0.5))  # 9 min 59.9 s reads as the 10 set
            lines += [
                "",
                ngettext(
                    "Answer before %(when)s (%(minutes)d minute after it was asked).",
                    "Answer before %(when)s (%(minutes)d minutes after it was asked).",
                    minutes,
                )
                % {"when": moment_in_zone(round.answer_by), "minutes": minutes},
            ]
    return subject, "\n".join(lines) + "\n", None, [user.email]


def parts_as_rounds(round: Any, *, waiting_only: bool = False) -> list[Any]:
    """Split ``round``'s parts (those still waiting, with ``waiting_only``), each as the round
    narrowed to it (its questions only) and routed as it: what its people are told of."""
    parts = RoundPart.objects.filter(round_id=round.pk)
    if waiting_only:
        parts = parts.filter(status=RoundPart.Status.PENDING)
    shown = []
    for part in parts.select_related("assigned_user", "assigned_group"):
        narrow = narrowed(round, part)
        narrow.assigned_user, narrow.assigned_group = part.assigned_user, part.assigned_group
        shown.append(narrow)
    return shown


def notify_new_round(round: Any) -> None:
    """Email the assignee(s) a link to the round. A mail failure never fails the call.

    A split round's parts are told each to their own people, with their own questions only."""
    if round.unsupported_reason:
        return
    if getattr(round, "split", False):
        for shown in parts_as_rounds(round):
            _notify_new(shown)
        return
    _notify_new(round)


def _notify_new(round: Any) -> None:
    to = recipients(round)
    if not to:
        return
    try:
        # One message per person: members of a group do not see each other's addresses, and
        # each reads it in their own language and zone.
        _send([_new_round_message(round, user) for user in to])
    except Exception:  # an unreachable mail server must not lose the round
        logger.exception("could not email round %s to %s", round.pk, [u.email for u in to])


def _expired_message(round: Any, user: User) -> tuple[str, str, None, list[str]]:
    call = round.call
    link = settings.MRTRWEB_BASE_URL.rstrip("/") + call.get_absolute_url()
    facts = {
        "server": str(call.connection),
        "kind": call.get_method_display(),
        "target": call.target,
        "asker": person_name(call.started_by),
    }
    with writing_to(user):
        subject = _("[mrtrweb] Expired: %(server)s %(kind)s %(target)s") % facts
        if round.answers:
            said = _(
                "The question from %(server)s for %(kind)s %(target)s, asked by %(asker)s, "
                "expired before it could be sent to the server. The answers given are kept."
            )
        else:
            said = _(
                "The question from %(server)s for %(kind)s %(target)s, asked by %(asker)s, "
                "expired before it could be answered."
            )
        body = (
            (said % facts)
            + "\n\n"
            + _("Start the call again from: %(link)s") % {"link": link}
            + "\n"
        )
    return one_line(subject, SUBJECT_LENGTH), body, None, [user.email]


def notify_expired(round: Any) -> None:
    """Email the assignee(s) that a round expired unanswered (or undelivered). Never raises.

    A split round's are its parts' people, each told of their own part: not the round's own
    assignee, who may have no part in it (nor see its call)."""
    if getattr(round, "split", False):
        messages: list[Any] = []
        to: list[Any] = []
        for shown in parts_as_rounds(round):
            for user in recipients(shown):
                if user.email not in {u.email for u in to}:  # one email an address
                    to.append(user)
                    messages.append(_expired_message(shown, user))
        _send_expired(round, messages, to)
        return
    to = recipients(round)
    _send_expired(round, [_expired_message(round, user) for user in to], to)


def _send_expired(round: Any, messages: list[Any], to: list[Any]) -> None:
    if not messages:
        return
    try:
        _send(messages)
    except Exception:  # an unreachable mail server must not stop the sweep
        logger.exception(
            "could not email the expiry of round %s to %s", round.pk, [u.email for u in to]
        )


def notify_reconnect(call: Any) -> None:
    """Email the person who must connect an account again for the call to go on: its caller
    (per-person accounts). Never raises; no token or server answer is in it."""
    user = call.started_by
    if call.connection.auth != call.connection.Auth.OAUTH_PERSON or not user.email:
        return
    base = settings.MRTRWEB_BASE_URL.rstrip("/")
    facts = {
        "server": str(call.connection),
        "kind": call.get_method_display(),
        "target": call.target,
    }
    try:
        with writing_to(user):
            subject = one_line(
                _("[mrtrweb] Reconnect your account on %(server)s to continue %(kind)s %(target)s")
                % facts,
                SUBJECT_LENGTH,
            )
            why = (call.waiting_for_authorization_reason or headline(call)).rstrip(".")
            body = (
                _("Your call %(kind)s %(target)s on %(server)s is waiting: %(why)s.")
                % {**facts, "why": why}
                + "\n\n"
                + _(
                    "Nothing was lost: any answers given are kept, and the call goes on by "
                    "itself once you reconnect your account here:"
                )
                + f"\n{base}{reconnect_url(call)}\n\n"
                + _(
                    "If the server stops keeping the call's state before then, the call expires "
                    "and must be started again from: %(link)s"
                )
                % {"link": base + call.get_absolute_url()}
                + "\n"
            )
        _send([(subject, body, None, [user.email])])
    except Exception:  # an unreachable mail server must not lose the call
        logger.exception("could not email call %s's caller to reconnect", call.pk)
