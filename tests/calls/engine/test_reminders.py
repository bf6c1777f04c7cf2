"""Reminders and escalation against the real fastmcp peer, with a fake clock:
reminders at 50% and 90% of the answering time are sent once each and none after an answer;
they are scheduled one task per minute like expiry, and the sweep catches up; a round still
unanswered goes to the policy's fallback, who is told, and so is whoever had it."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.db.models import F
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from mrtrweb.calls import engine
from mrtrweb.calls.access import can_answer
from mrtrweb.calls.models import Call, Round
from mrtrweb.people.speaking import writing_to
from mrtrweb.people.when import moment_in_zone
from mrtrweb.policies.models import Policy
from tests.calls.engine.delivery_support import DATABASE_QUEUE, run_tasks
from tests.calls.engine.reminders_support import (
    answer_on_the_page,
    kinds,
    moment,
    signed_in,
    start,
)
from tests.support.factories import make_connection, make_user

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("inline_tasks")]


@pytest.fixture
def people() -> dict[str, Any]:
    return {
        name: make_user(name, email=f"{name}@example.com")
        for name in ("carl", "ada", "grace", "linus")
    }


@pytest.fixture
def connection(fastmcp_peer: Any) -> Any:
    return make_connection(fastmcp_peer, state_lifetime=timedelta(hours=1))


def reminders_to(mailoutbox: Any) -> list[tuple[str, ...]]:
    return [tuple(m.to) for m in mailoutbox if "Reminder" in m.subject]


def test_reminders_at_half_and_ninety_percent_are_sent_once_each(
    connection: Any, people: dict[str, Any], mailoutbox: Any
) -> None:
    Policy.objects.create(connection=connection, reminders=[0.5, 0.9])
    round = start(connection, people["carl"], route_user=people["ada"])
    assert [m.to for m in mailoutbox] == [["ada@example.com"]]  # the round itself
    assert round.remind_at == moment(round, 0.5)

    assert engine.remind_due(moment(round, 0.49)) == 0
    assert reminders_to(mailoutbox) == []
    assert engine.remind_due(moment(round, 0.5)) == 1
    assert reminders_to(mailoutbox) == [("ada@example.com",)]
    reminder = mailoutbox[-1]
    assert "50%" in reminder.body and round.get_absolute_url() in reminder.body
    # Once: a later task, or the sweep, finds nothing more until 90%.
    assert engine.remind_due(moment(round, 0.6)) == 0
    assert engine.run_due(now=moment(round, 0.7))["reminded"] == 0
    round.refresh_from_db()
    assert (round.reminders_sent, round.remind_at) == (1, moment(round, 0.9))

    assert engine.remind_due(moment(round, 0.91)) == 1
    assert "90%" in mailoutbox[-1].body
    assert engine.remind_due(moment(round, 0.99)) == 0
    assert reminders_to(mailoutbox) == [("ada@example.com",)] * 2
    round.refresh_from_db()
    assert (round.reminders_sent, round.remind_at) == (2, None)
    reminded = round.events.filter(kind="reminded").order_by("id")
    assert [(e.detail["reminder"], e.detail["fraction"]) for e in reminded] == [(1, 0.5), (2, 0.9)]

    # Reminded or not, the round is answered as before, and the server gets the answer.
    answer_on_the_page(people["ada"], round)
    round.refresh_from_db()
    assert round.status == Round.Status.DELIVERED
    assert round.call.status == Call.Status.COMPLETED
    assert round.call.result["structuredContent"]["confirmed"] is True


def test_no_reminder_after_an_answer_nor_for_a_closed_round(
    connection: Any, people: dict[str, Any], mailoutbox: Any
) -> None:
    Policy.objects.create(connection=connection, reminders=[0.5, 0.9])
    answered = start(connection, people["carl"], route_user=people["ada"])
    closed = start(connection, people["carl"], route_user=people["ada"])
    answer_on_the_page(people["ada"], answered)
    engine.abandon(closed, people["ada"])
    answered.refresh_from_db()
    assert answered.status == Round.Status.DELIVERED
    late = max(moment(answered, 0.95), moment(closed, 0.95))
    assert engine.remind_due(late) == 0
    assert engine.run_due(now=late)["reminded"] == 0
    assert reminders_to(mailoutbox) == []
    assert "reminded" not in kinds(answered) + kinds(closed)


def test_a_sweep_that_comes_late_sends_one_reminder_for_those_it_missed(
    connection: Any, people: dict[str, Any], mailoutbox: Any
) -> None:
    Policy.objects.create(connection=connection, reminders=[0.5, 0.9])
    round = start(connection, people["carl"], route_user=people["ada"])
    # The worker was down past both moments: one email (the latest), both counted as sent.
    assert engine.run_due(now=moment(round, 0.95))["reminded"] == 1
    assert reminders_to(mailoutbox) == [("ada@example.com",)]
    assert "90%" in mailoutbox[-1].body
    round.refresh_from_db()
    assert (round.reminders_sent, round.remind_at) == (2, None)


def test_reminders_are_due_times_on_the_rounds_and_the_scheduler_sends_them(
    connection: Any, people: dict[str, Any], mailoutbox: Any, settings: Any
) -> None:
    settings.TASKS = DATABASE_QUEUE
    Policy.objects.create(connection=connection, reminders=[0.5, 0.9])
    rounds = [start(connection, people["carl"], route_user=people["ada"]) for _ in range(3)]
    # Nothing is queued for later: each round holds when its first reminder is due.
    assert [r.remind_at for r in rounds] == [moment(r, 0.5) for r in rounds]
    assert not DBTaskResult.objects.exists()
    # Time passes: the first round's 50% moment is a second ago, and the scheduler sends it.
    round = rounds[0]
    gone = moment(round, 0.5) - timezone.now() + timedelta(seconds=1)
    Round.objects.filter(pk=round.pk).update(
        created_at=F("created_at") - gone,
        expires_at=F("expires_at") - gone,
        remind_at=F("remind_at") - gone,
    )
    round.refresh_from_db()
    run_tasks()
    assert reminders_to(mailoutbox) == [("ada@example.com",)]
    round.refresh_from_db()
    assert round.reminders_sent == 1
    # ... and its next reminder is its next due time.
    assert round.remind_at == moment(round, 0.9)
    assert [r.reminders_sent for r in Round.objects.filter(pk__in=[r.pk for r in rounds[1:]])] == [
        0,
        0,
    ]


def test_an_unanswered_round_is_escalated_to_the_fallback_once(
    connection: Any, people: dict[str, Any], mailoutbox: Any
) -> None:
    ada, grace = people["ada"], people["grace"]
    Policy.objects.create(
        connection=connection, escalate_after=timedelta(minutes=30), escalate_user=grace
    )
    round = start(connection, people["carl"], route_user=ada)
    mailoutbox.clear()
    assert round.remind_at == round.created_at + timedelta(minutes=30)
    assert engine.remind_due(round.created_at + timedelta(minutes=29)) == 0
    assert engine.remind_due(round.created_at + timedelta(minutes=31)) == 1
    round.refresh_from_db()
    assert round.assigned_user == grace and round.escalated_at is not None
    assert round.remind_at is None and round.status == Round.Status.PENDING
    escalated = round.events.get(kind="escalated")
    assert escalated.actor is None
    assert escalated.detail["assigned_user"] == "grace"
    assert escalated.detail["from_user"] == "ada"
    # The fallback is asked as for any round; the one who had it is told it moved on.
    by_address = {m.to[0]: m for m in mailoutbox}
    assert set(by_address) == {"grace@example.com", "ada@example.com"}
    assert round.get_absolute_url() in by_address["grace@example.com"].body
    assert "Passed on to grace" in by_address["ada@example.com"].subject
    # Once.
    assert engine.remind_due(round.created_at + timedelta(hours=1)) == 0
    assert engine.run_due(now=round.created_at + timedelta(minutes=59))["reminded"] == 0
    assert len(mailoutbox) == 2
    # The fallback answers; the one who had it no longer can.
    assert not can_answer(ada, round)
    answer_on_the_page(grace, round)
    round.refresh_from_db()
    assert (round.status, round.answered_by) == (Round.Status.DELIVERED, grace)


def test_escalation_to_a_group_and_reminders_after_it_reach_its_members(
    connection: Any, people: dict[str, Any], mailoutbox: Any
) -> None:
    finance = Group.objects.create(name="Finance")
    finance.user_set.add(people["grace"], people["linus"])
    Policy.objects.create(
        connection=connection,
        reminders=[0.9],
        escalate_after=timedelta(minutes=10),
        escalate_group=finance,
    )
    round = start(connection, people["carl"], route_user=people["ada"])
    mailoutbox.clear()
    assert engine.remind_due(round.created_at + timedelta(minutes=10)) == 1
    round.refresh_from_db()
    assert (round.assigned_user, round.assigned_group) == (None, finance)
    assert round.remind_at == moment(round, 0.9)
    assert sorted(m.to[0] for m in mailoutbox) == [
        "ada@example.com",
        "grace@example.com",
        "linus@example.com",
    ]
    mailoutbox.clear()
    assert engine.remind_due(moment(round, 0.9)) == 1
    assert sorted(reminders_to(mailoutbox)) == [("grace@example.com",), ("linus@example.com",)]
    assert kinds(round).count("escalated") == 1


def test_an_escalation_due_after_an_answer_does_nothing(
    connection: Any, people: dict[str, Any], mailoutbox: Any
) -> None:
    Policy.objects.create(
        connection=connection,
        escalate_after=timedelta(minutes=5),
        escalate_user=people["grace"],
    )
    round = start(connection, people["carl"], route_user=people["ada"])
    answer_on_the_page(people["ada"], round)
    mailoutbox.clear()
    assert engine.remind_due(round.created_at + timedelta(minutes=6)) == 0
    round.refresh_from_db()
    assert (round.assigned_user, round.escalated_at) == (people["ada"], None)
    assert mailoutbox == []


def test_a_reminder_names_the_deadline_the_round_page_shows(
    connection: Any, people: dict[str, Any], mailoutbox: Any
) -> None:
    # Under renewal the server's state (an hour here) is renewed behind the person's deadline
    # (a week): the emails name the week, as the round page's Due does.
    Policy.objects.create(
        connection=connection, renew_expired=True, renew_unsafe=True, reminders=[0.5]
    )
    call = engine.start_call(
        connection=connection,
        method=Call.Method.TOOL,
        target="approve_deploy",
        arguments={"service": "api"},
        user=people["carl"],
        route_user=people["ada"],
    )
    assert call.status == Call.Status.WAITING, call.error
    round = call.rounds.get()
    assert round.has_request_state
    assert round.answer_by == round.created_at + timedelta(days=7)
    assert round.expires_at == round.created_at + timedelta(hours=1)
    with writing_to(people["ada"]):
        due, state_ends = moment_in_zone(round.answer_by), moment_in_zone(round.expires_at)
    page = signed_in(people["ada"]).get(round.get_absolute_url()).content.decode()
    assert f'Due <time datetime="{round.answer_by.isoformat()}"' in page
    # Half of the person's week, not of the state's hour.
    assert round.remind_at == round.created_at + timedelta(days=3.5)
    assert engine.remind_due(round.remind_at) == 1
    asked, reminder = mailoutbox[0].body, mailoutbox[-1].body
    assert "Reminder" in mailoutbox[-1].subject
    assert f"Answer before {due} (" in asked
    assert f"Answer before {due};" in reminder
    assert state_ends not in asked + reminder
