"""A new pending round emails whoever must answer it, with a link to the round."""

from __future__ import annotations

from typing import Any

import pytest
from django.core import mail

from mrtrweb.calls import engine
from tests.inbox.support import APPROVERS, admin, ask, connection, person, to_group, to_user

pytestmark = pytest.mark.django_db

BASE = "https://mrtr.example"


@pytest.fixture(autouse=True)
def _base_url(settings: Any) -> None:
    settings.MRTRWEB_BASE_URL = BASE + "/"
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"


def recipients() -> list[str]:
    return sorted(address for message in mail.outbox for address in message.recipients())


def test_a_round_routed_to_a_named_user_mails_that_user_a_link_to_it(
    fastmcp_peer: Any, django_capture_on_commit_callbacks: Any
) -> None:
    bob = person("bob")
    with django_capture_on_commit_callbacks(execute=True):
        round = ask(to_user(fastmcp_peer, bob), person("ada"), service="api")
    assert recipients() == ["bob@example.test"]
    (message,) = mail.outbox
    assert "Deploy api to staging?" in message.subject
    assert f"{BASE}/rounds/{round.pk}/" in message.body
    assert "Answer before" in message.body


def test_by_default_the_caller_is_asked_and_mailed(
    fastmcp_peer: Any, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        round = ask(connection(fastmcp_peer), person("ada"))
    assert recipients() == ["ada@example.test"]
    assert round.get_absolute_url() in mail.outbox[0].body


def test_a_group_round_mails_every_active_member_with_an_address(
    fastmcp_peer: Any, django_capture_on_commit_callbacks: Any
) -> None:
    for name in ("bea", "cid"):
        person(name, APPROVERS)
    person("dan", APPROVERS, email=False)
    person("eve", APPROVERS, active=False)
    person("fay")  # not a member
    with django_capture_on_commit_callbacks(execute=True):
        round = ask(to_group(fastmcp_peer), person("ada"))
    assert recipients() == ["bea@example.test", "cid@example.test"]
    assert all(f"{BASE}/rounds/{round.pk}/" in m.body for m in mail.outbox)


def test_reassigning_mails_the_new_assignee(
    fastmcp_peer: Any, django_capture_on_commit_callbacks: Any
) -> None:
    bob, gus = person("bob"), person("gus", "Night shift")
    round = ask(to_user(fastmcp_peer, bob), person("ada"))
    assert mail.outbox == []  # nothing committed yet, so nothing sent

    with django_capture_on_commit_callbacks(execute=True):
        engine.reassign(round, admin(), user=gus)
    assert recipients() == ["gus@example.test"]
    assert f"{BASE}/rounds/{round.pk}/" in mail.outbox[0].body

    mail.outbox.clear()
    hal = person("hal", APPROVERS)
    with django_capture_on_commit_callbacks(execute=True):
        engine.reassign(round, admin("root"), group=hal.groups.get(name=APPROVERS))
    assert recipients() == ["hal@example.test"]


def test_a_round_nobody_can_answer_mails_nobody(
    fastmcp_peer: Any, django_capture_on_commit_callbacks: Any
) -> None:
    from mrtrweb.calls.models import Call

    with django_capture_on_commit_callbacks(execute=True):
        call = engine.start_call(
            connection=connection(fastmcp_peer),
            method=Call.Method.TOOL,
            target="ask_undeclared",
            arguments={},
            user=person("ada"),
        )
    assert call.rounds.get().unsupported_reason
    assert mail.outbox == []
