"""A round that asks more than a page can show is not rendered, and can still be refused.

The hostile peer's ``many-questions`` asks 5,000 questions at once: rendered, the round page
took 6 s, and its post held more fields than Django accepts, so not even Cancel got through.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model

from mrtrweb.calls import engine
from mrtrweb.calls.models import Call, Round
from mrtrweb.calls.presenting.rounds import MAX_QUESTIONS, RoundAnswers
from mrtrweb.servers.models import Connection
from tests.factories import CallFactory, RoundFactory

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _inline_tasks(inline_tasks: None) -> None:
    """Answers are delivered inline."""


def test_too_many_questions_show_why_and_cancel_reaches_the_server(
    hostile_peer: Any, client: Any
) -> None:
    user = get_user_model().objects.create_user("quinn", password="pw-quinn-123")
    url = f"{hostile_peer.base_url}/a/many-questions/mcp"
    connection = Connection.objects.create(name="many", url=url)
    call = engine.start_call(
        connection=connection, method=Call.Method.TOOL, target="attack", arguments={}, user=user
    )
    round = call.rounds.get()
    assert len(round.input_requests) > MAX_QUESTIONS

    answers = RoundAnswers(round)
    assert not any(section.form for section in answers.sections)
    assert not answers.can_accept and answers.answerable
    assert "asked 5000 questions at once" in answers.sections[0].error

    client.force_login(user)
    page = client.get(round.get_absolute_url())
    assert page.status_code == 200 and b"asked 5000 questions at once" in page.content
    response = client.post(round.get_absolute_url(), {"action": "cancel"})
    assert response.status_code == 303
    round.refresh_from_db()
    call.refresh_from_db()
    assert round.status == Round.Status.DELIVERED
    assert call.status == Call.Status.COMPLETED
    assert call.result["content"][0]["text"] == "5000 answers"


def test_a_round_within_the_limits_renders_every_form(hostile_peer: Any) -> None:
    user = get_user_model().objects.create_user("rae", password="pw-rae-123")
    url = f"{hostile_peer.base_url}/a/elicitation-text/mcp"
    connection = Connection.objects.create(name="fits", url=url)
    call = engine.start_call(
        connection=connection, method=Call.Method.TOOL, target="attack", arguments={}, user=user
    )
    answers = RoundAnswers(call.rounds.get())
    assert [section.mode for section in answers.sections] == ["form"]
    assert answers.can_accept


def test_the_fields_of_all_questions_together_are_limited() -> None:
    call = CallFactory(target="attack")

    def question(fields: int) -> dict[str, Any]:
        properties = {f"f{i}": {"type": "string"} for i in range(fields)}
        schema = {"type": "object", "properties": properties}
        return {
            "method": "elicitation/create",
            "params": {"message": "q", "requestedSchema": schema},
        }

    # 60 + 40 fields fit on a page; the third question's 10 more do not.
    requests = {"a": question(60), "b": question(40), "c": question(10)}
    round = RoundFactory(call=call, input_requests=requests)
    answers = RoundAnswers(round)
    assert [section.mode for section in answers.sections] == ["form", "form", "invalid"]
    assert "asks too much" in answers.sections[2].error
    assert not answers.can_accept and answers.answerable
