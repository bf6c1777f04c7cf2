"""Helpers of the reminders, escalation and delegation tests: rounds parked by the real
fastmcp peer (in this process, tests/peers/inprocess.py), answered through the real round
page, and moments of a round's answering time.

The clock is faked the way the expiry tests do it: the engine's functions take ``now`` (what
a task or the sweep would see then), and a test that runs the real tasks moves the round's
own times back instead."""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

from django.test import Client

from mrtrweb.calls import engine
from mrtrweb.calls.models import Call, Round
from mrtrweb.elicitation import prefix_for_key
from tests.elicitation.support import post

OK = {"ok": True}


def start(connection: Any, caller: Any, **route: Any) -> Round:
    """A call of the peer's ``stateless_confirm`` (one round, one yes/no question) by
    ``caller``, parked; its round."""
    call = engine.start_call(
        connection=connection,
        method=Call.Method.TOOL,
        target="stateless_confirm",
        arguments={"action": "deploy"},
        user=caller,
        **route,
    )
    assert call.status == Call.Status.WAITING, call.error
    return call.rounds.get()


def moment(round: Round, fraction: float) -> datetime:
    """When ``fraction`` of ``round``'s answering time (parking to deadline) has gone."""
    assert round.expires_at is not None
    return round.created_at + (round.expires_at - round.created_at) * fraction


def signed_in(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def answer_on_the_page(user: Any, round: Round) -> Round:
    """``user`` opens the round page and answers yes, as a browser posts it; the round once
    its delivery (on the page's own delivery thread) is over."""
    client = signed_in(user)
    page = client.get(round.get_absolute_url())
    assert page.status_code == 200, page.status_code
    (key,) = round.input_requests
    data = post(prefix_for_key(key), OK)
    fields = {name: data.getlist(name) for name in data}
    response = client.post(round.get_absolute_url(), {**fields, "action": "accept"})
    assert response.status_code == 303, response.status_code
    deadline = time.monotonic() + 15.0
    while True:
        round.refresh_from_db()
        if round.status not in (Round.Status.SUBMITTED, Round.Status.DELIVERING):
            return round
        if time.monotonic() > deadline:
            return round
        time.sleep(0.02)


def kinds(round: Round) -> list[str]:
    return list(round.events.order_by("created_at", "id").values_list("kind", flat=True))
