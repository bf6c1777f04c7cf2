"""The emails of reminders and escalation (``engine.reminders``, ``engine.escalation``),
beside ``notices``: one message per person, built per recipient so each can be written in
their own language and time zone (as ``notices`` does), and never raising: a mail server down
must not stop a task or the sweep."""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.mail import send_mass_mail
from django.utils.translation import gettext as _

from mrtrweb.mcp.oneline import one_line
from mrtrweb.people.speaking import writing_to
from mrtrweb.people.when import moment_in_zone

from ..access.routing import answering_for, standing_in_now
from ..presenting.rounds import person_name, present
from .notices import SUBJECT_LENGTH, parts_as_rounds, recipients

__all__ = ["notify_escalated_away", "notify_reminder", "waiting_for"]

logger = logging.getLogger(__name__)

Message = tuple[str, str, None, list[str]]


def _people(
    user: User | None = None,
    group: Any = None,
    claimed_by: User | None = None,
    stand_in: User | None = None,
) -> list[Any]:
    """Whom a round so routed waits for: its claimer, else its person (and ``stand_in``, who
    stands in for them on it now), else its group's active members; one per address."""
    if claimed_by is not None:
        users = [claimed_by]
    elif user is not None:
        users = [user] if stand_in is None else [user, stand_in]
    elif group is not None:
        users = list(group.user_set.filter(is_active=True))
    else:
        users = []
    by_address = {u.email: u for u in sorted(users, key=lambda u: u.pk) if u.is_active and u.email}
    return [by_address[address] for address in sorted(by_address)]


def waiting_for(round: Any) -> list[Any]:
    """The people a reminder of ``round`` goes to."""
    return _people(
        round.assigned_user, round.assigned_group, round.claimed_by, standing_in_now(round)
    )


def _send(what: str, round: Any, messages: list[Message]) -> None:
    if not messages:
        return
    try:
        send_mass_mail(messages)
    except Exception:  # an unreachable mail server must not stop the task or the sweep
        logger.exception("could not email the %s of round %s", what, round.pk)


def _reminder(round: Any, user: User, fraction: float) -> Message:
    with writing_to(user):  # their language and zone, not the worker's
        return _reminder_text(round, user, fraction)


def _reminder_text(round: Any, user: User, fraction: float) -> Message:
    call = round.call
    link = settings.MRTRWEB_BASE_URL.rstrip("/") + round.get_absolute_url()
    question = one_line(present(round).first_message, SUBJECT_LENGTH)
    facts = {
        "asker": person_name(call.started_by),
        "question": question or call.target,
        "kind": call.get_method_display(),
        "target": call.target,
        "server": call.connection.title or call.connection.name,
        "link": link,
        "percent": round_percent(fraction),
    }
    subject = one_line(
        _("[mrtrweb] Reminder: %(asker)s still waits for your answer: %(question)s") % facts,
        SUBJECT_LENGTH,
    )
    lines = [
        _(
            "%(asker)s started %(kind)s %(target)s on %(server)s, and it still needs your "
            "answer (%(percent)s%% of the time to answer has gone):"
        )
        % facts,
        "",
        question,
        "",
        _("Answer it here: %(link)s") % facts,
    ]
    absent = answering_for(round, user)
    if absent is not None:
        lines += ["", _("You stand in for %(person)s.") % {"person": person_name(absent)}]
    # The deadline the round page shows (``answer_by``): under renewal the server's state
    # (``expires_at``) ends and is renewed long before it.
    if round.answer_by:
        lines += [
            "",
            _("Answer before %(when)s; after that it cannot be answered.")
            % {"when": moment_in_zone(round.answer_by)},
        ]
    return subject, "\n".join(lines) + "\n", None, [user.email]


def round_percent(fraction: float) -> str:
    return f"{fraction * 100:.0f}"


def notify_reminder(round: Any, fraction: float) -> None:
    """Remind whoever ``round`` waits for that it does (``fraction`` of its time has gone).

    A split round waits for its parts' people, not for its own assignee: each part still
    waiting is reminded to its own people with its own questions only, as ``notices`` tells
    them of the round."""
    if getattr(round, "split", False):
        messages = []
        for shown in parts_as_rounds(round, waiting_only=True):
            # The part's own people, as its first email (who may open a part: access.part_for).
            messages += [_reminder(shown, user, fraction) for user in recipients(shown)]
        _send("reminder", round, messages)
        return
    _send("reminder", round, [_reminder(round, user, fraction) for user in waiting_for(round)])


def _escalated(round: Any, user: User, fallback: str) -> Message:
    with writing_to(user):
        return _escalated_text(round, user, fallback)


def _escalated_text(round: Any, user: User, fallback: str) -> Message:
    call = round.call
    facts = {
        "asker": person_name(call.started_by),
        "kind": call.get_method_display(),
        "target": call.target,
        "server": call.connection.title or call.connection.name,
        "fallback": fallback,
        "link": settings.MRTRWEB_BASE_URL.rstrip("/") + call.get_absolute_url(),
    }
    subject = one_line(
        _("[mrtrweb] Passed on to %(fallback)s: %(kind)s %(target)s") % facts, SUBJECT_LENGTH
    )
    body = (
        _(
            "The question of %(asker)s's %(kind)s %(target)s on %(server)s was not answered in "
            "time, so it was passed on to %(fallback)s, as the approval policy says. You no "
            "longer need to answer it."
        )
        % facts
        + "\n\n"
        + _("The call: %(link)s") % facts
        + "\n"
    )
    return subject, body, None, [user.email]


def notify_escalated_away(
    round: Any,
    *,
    user: User | None = None,
    group: Any = None,
    claimed_by: User | None = None,
    stand_in: User | None = None,
) -> None:
    """Tell whoever ``round`` waited for before its escalation (``user`` and their
    ``stand_in``, ``group`` or its ``claimed_by``) that it went to the fallback (the round's
    assignee now).

    Not of a split round: its parts stay with their people, so nobody who was asked lost it,
    and its own assignee may have no part in it (nor see its call)."""
    round.refresh_from_db()
    if round.split:
        return
    if round.assigned_user is not None:
        fallback = person_name(round.assigned_user)
    else:
        fallback = _("the group %(group)s") % {"group": round.assigned_group.name}
    # Nobody hears it twice: the fallback itself got the new round's email.
    now_asked = {u.pk for u in _people(round.assigned_user, round.assigned_group)}
    people = [p for p in _people(user, group, claimed_by, stand_in) if p.pk not in now_asked]
    _send("escalation", round, [_escalated(round, p, fallback) for p in people])
