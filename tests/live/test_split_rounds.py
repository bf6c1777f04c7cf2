"""What a call page's socket tells someone who sees the call through one part of a split round,
on the real ASGI app with a real session and the real fastmcp peer: frames name only the kind
of change, never a round's questions, answers or comments, and the page each frame fetches
again shows them only their part (docs/approval-policies.md, "Split rounds")."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from channels.db import database_sync_to_async
from django.test import Client

from mrtrweb.calls import engine
from mrtrweb.calls.models import Call
from mrtrweb.policies.snapshot import PolicySnapshot
from tests.support.factories import make_connection, make_user

from .conftest import frames_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("layer")]

CONFIRM = {"confirm": {"action": "accept", "content": {"ok": True, "note": "carl-note-7"}}}
NOT_ANNS = (
    "Go ahead with Atlas?",
    "carl-note-7",
    "carl-comment-7",
    "When does Atlas start?",
    "bob-comment-7",
)
HX_GET = re.compile(r'hx-get="([^"]+)"')


@database_sync_to_async
def start(peer: Any) -> tuple[Call, dict[str, Any]]:
    people = {name: make_user(name) for name in ("sam", "ann", "bob", "carl")}
    call = engine.start_call(
        connection=make_connection(peer),
        method=Call.Method.TOOL,
        target="plan_and_confirm",
        arguments={"project": "Atlas", "confirm_first": True},
        user=people["sam"],
        route_user=people["carl"],
        policy=PolicySnapshot(
            split_routes={"budget": {"user": "ann"}, "schedule": {"user": "bob"}}
        ),
    )
    return call, people


@database_sync_to_async
def carl_answers(call: Call, carl: Any) -> None:
    engine.answer(call.rounds.get(index=1), CONFIRM, carl, comment="carl-comment-7")


@database_sync_to_async
def bob_answers(call: Call, bob: Any) -> None:
    schedule = {"schedule": {"action": "accept", "content": {"start": "2027-03-15"}}}
    engine.answer(call.rounds.get(index=2), schedule, bob, comment="bob-comment-7")


@database_sync_to_async
def fetched_by(user: Any, url: str) -> str:
    client = Client()
    client.force_login(user)
    response = client.get(url)
    assert response.status_code == 200, url
    return response.content.decode()


async def test_a_parts_person_hears_the_call_move_on_and_reads_only_their_part(
    connect: Any, fastmcp_peer: Any, inline_tasks: None
) -> None:
    call, people = await start(fastmcp_peer)
    # Ann sees the call once her part of round 2 is parked; her socket opens then, as the
    # page she opens does, and hears the call from there on.
    await carl_answers(call, people["carl"])
    socket = await connect(people["ann"], f"/ws/calls/{call.pk}/?view=call&state=stale")
    frames = await frames_until(socket, "round_split")
    # Bob answers his part while she watches: she hears that, and no more of it.
    await bob_answers(call, people["bob"])
    frames += await frames_until(socket, "part_answered")
    for frame in frames:
        assert not any(mark in frame for mark in NOT_ANNS), frame
        for url in HX_GET.findall(frame):
            page = await fetched_by(people["ann"], html.unescape(url))
            assert "Budget for Atlas?" in page
            assert not any(mark in page for mark in NOT_ANNS), url
