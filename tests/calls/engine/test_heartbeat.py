"""A delivery whose server keeps reporting progress is alive: the watchdog waits for it."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from mrtrweb.calls import engine
from mrtrweb.calls.engine import progress
from mrtrweb.calls.models import Call, Round
from mrtrweb.servers.models import Connection
from tests.support.factories import make_user

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def progress_peer(peer_factory: Any) -> Any:
    return peer_factory("tests.live.progress_peer")


def test_progress_moves_the_watchdogs_deadline(
    progress_peer: Any, inline_tasks: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(progress, "HEARTBEAT_EVERY", 0.0)
    caller = make_user("ada")
    conn = Connection.objects.create(name="progress", url=progress_peer.url)
    call = engine.start_call(
        connection=conn,
        method=Call.Method.TOOL,
        target="confirm_then_work",
        arguments={"steps": 2, "delay": 0.1},
        user=caller,
    )
    round = call.rounds.get()
    engine.answer(round, {"confirm": {"action": "accept", "content": {"go": True}}}, caller)
    round.refresh_from_db()
    assert round.status == Round.Status.DELIVERED
    # Heard from during the attempt, after it started.
    assert round.heard_at is not None and round.heard_at > round.delivering_since

    # The same facts on a round still delivering: an attempt started long ago but heard from
    # a moment ago is alive; one never heard from is stuck.
    stuck_after = engine.stuck_after(conn)
    now = timezone.now()
    Round.objects.filter(pk=round.pk).update(
        status=Round.Status.DELIVERING,
        delivering_since=now - stuck_after - timedelta(seconds=30),
        heard_at=now - timedelta(seconds=1),
    )
    assert not engine.check_delivery(round.pk, round.attempts, now=now)
    assert Round.objects.get(pk=round.pk).status == Round.Status.DELIVERING
    Round.objects.filter(pk=round.pk).update(heard_at=None)
    assert engine.check_delivery(round.pk, round.attempts, now=now)
    assert Round.objects.get(pk=round.pk).status == Round.Status.UNKNOWN
