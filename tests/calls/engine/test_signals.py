"""The engine announces every audit event once its transaction has committed."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import transaction

from mrtrweb.calls import engine
from mrtrweb.calls.models import Round
from mrtrweb.calls.presenting.history import trail
from mrtrweb.calls.signals import call_event
from tests.calls.engine.delivery_support import park_approval
from tests.factories import CallFactory
from tests.support.factories import make_user

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def heard() -> Any:
    events: list[dict[str, Any]] = []

    def receiver(sender: Any, **event: Any) -> None:
        events.append(event)

    call_event.connect(receiver)
    yield events
    call_event.disconnect(receiver)


def test_every_event_of_a_round_trip_is_announced_in_order(
    fastmcp_peer: Any, heard: list[dict[str, Any]], inline_tasks: None
) -> None:
    user = make_user("ada")
    round = park_approval(fastmcp_peer, user)
    call = round.call
    engine.answer(
        round,
        {
            "approval": {
                "action": "accept",
                "content": {"approve": True, "replicas": 1, "window": "tonight"},
            }
        },
        user,
    )
    kinds = [e["kind"] for e in heard]
    # Every event heard is on the trail (the start, from the call row), and nothing else.
    assert kinds == [event.kind for event in trail(call)]
    assert kinds[:2] == ["started", "round_parked"]
    assert "delivered" in kinds and kinds[-1] in {"completed", "round_parked"}
    parked = heard[1]
    assert parked["call_id"] == call.pk and parked["round_id"] == round.pk


def test_nothing_is_announced_for_a_transaction_that_rolls_back(
    heard: list[dict[str, Any]],
) -> None:
    call = CallFactory()
    with pytest.raises(RuntimeError), transaction.atomic():
        engine.note(call, "claimed")
        raise RuntimeError("roll back")
    assert heard == []
    engine.note(call, "released")
    assert [e["kind"] for e in heard] == ["released"]


def test_a_failing_receiver_does_not_break_the_engine(heard: list[dict[str, Any]]) -> None:
    def broken(sender: Any, **event: Any) -> None:
        raise ValueError("boom")

    call_event.connect(broken)
    try:
        call = CallFactory()
        engine.note(call, "claimed")
    finally:
        call_event.disconnect(broken)
    assert [e["kind"] for e in heard] == ["claimed"]


APPROVAL = {
    "approval": {
        "action": "accept",
        "content": {"approve": True, "replicas": 1, "window": "tonight"},
    }
}


def test_an_answer_tells_whom_it_concerns_as_the_stored_round_says(
    fastmcp_peer: Any, heard: list[dict[str, Any]], inline_tasks: None
) -> None:
    from mrtrweb.live.events import concerned_users

    ada, bob = make_user("ada"), make_user("bob")
    round = park_approval(fastmcp_peer, ada)
    round.assigned_user = bob
    Round.objects.filter(pk=round.pk).update(assigned_user=bob)
    engine.answer(round, APPROVAL, bob)
    answered = next(e for e in heard if e["kind"] == "answered")
    # Told by the engine (no round read by the receivers), and the same as a lookup says.
    assert answered["people"] is not None
    looked_up = concerned_users(answered["call_id"], answered["round_id"], "answered", ada.pk)
    assert (
        concerned_users(
            answered["call_id"], answered["round_id"], "answered", ada.pk, answered["people"]
        )
        == looked_up
        == {ada.pk, bob.pk}
    )


def test_a_round_reassigned_after_it_was_read_is_answered_and_its_people_looked_up(
    fastmcp_peer: Any, heard: list[dict[str, Any]], inline_tasks: None
) -> None:
    ada, bob = make_user("ada"), make_user("bob")
    round = park_approval(fastmcp_peer, ada)  # read while routed as parked
    # Another process routes it to bob meanwhile: what this one read is stale.
    Round.objects.filter(pk=round.pk).update(assigned_user=bob)
    engine.answer(round, APPROVAL, ada)
    stored = Round.objects.get(pk=round.pk)
    assert stored.answered_by_id == ada.pk and stored.status != Round.Status.PENDING
    answered = next(e for e in heard if e["kind"] == "answered")
    # Not told from the stale read: the receivers read the round (and find bob).
    assert answered["people"] is None
    with pytest.raises(engine.AlreadyAnswered):
        engine.answer(round, APPROVAL, ada)
