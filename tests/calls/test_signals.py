"""The engine announces every audit event once its transaction has committed."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import transaction

from mrtrweb.calls import engine
from mrtrweb.calls.models import Call
from mrtrweb.calls.signals import call_event
from mrtrweb.calls.trail import trail
from mrtrweb.servers.models import Connection
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
    conn = Connection.objects.create(name="peer", url=fastmcp_peer.url)
    call = engine.start_call(
        connection=conn,
        method=Call.Method.TOOL,
        target="approve_deploy",
        arguments={"service": "api"},
        user=user,
    )
    round = call.rounds.get()
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
    user = make_user("ada")
    conn = Connection.objects.create(name="peer", url="http://127.0.0.1:9/mcp")
    call = Call.objects.create(connection=conn, method="tools/call", target="t", started_by=user)
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
        user = make_user("ada")
        conn = Connection.objects.create(name="peer", url="http://127.0.0.1:9/mcp")
        call = Call.objects.create(
            connection=conn, method="tools/call", target="t", started_by=user
        )
        engine.note(call, "claimed")
    finally:
        call_event.disconnect(broken)
    assert [e["kind"] for e in heard] == ["claimed"]
