"""What each process of the quorum race runs (``manage.py shell -c``,
tests/calls/engine/test_quorum_race.py): set up a quorum round with its proposal, approve it when
every racer is ready, or show what is stored. Each prints one JSON line."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.utils import timezone

from mrtrweb.calls import engine
from mrtrweb.calls.models import Call, Round, Vote
from mrtrweb.policies.models import Policy
from mrtrweb.servers.models import Connection

APPROVERS = ["alice", "bob", "cy", "dee", "eve", "fay"]
REQUIRED = 4  # the proposer and three of the five racers


def setup(url: str) -> None:
    """Finance (six people), a 4-approval quorum on the connection, a call by sam, its round
    proposed by alice."""
    users = get_user_model().objects
    finance = Group.objects.create(name="Finance")
    for name in APPROVERS:
        users.create_user(name, password=f"pw-{name}-race-1").groups.add(finance)
    sam = users.create_user("sam", password="pw-sam-race-1")
    conn = Connection.objects.create(name="raced", title="Raced", url=url, tested_at=timezone.now())
    Policy.objects.create(connection=conn, approvals_required=REQUIRED, approvers_group=finance)
    call = engine.start_call(
        connection=conn,
        method=Call.Method.TOOL,
        target="approve_deploy",
        arguments={"service": "api"},
        user=sam,
    )
    round = call.rounds.get()
    proposal = {
        "approval": {
            "action": "accept",
            "content": {"approve": True, "replicas": 3, "window": "tonight", "notify": ["ops"]},
        }
    }
    engine.answer(round, proposal, users.get(username="alice"))
    print(json.dumps({"round": round.pk, "status": Round.objects.get(pk=round.pk).status}))


def race(gate: str, round_id: int, username: str) -> None:
    """Say ready (a file in ``gate``), wait for the go (``gate/go``), then approve."""
    user = get_user_model().objects.get(username=username)
    round = Round.objects.select_related("call").get(pk=round_id)
    Path(gate, f"ready-{os.getpid()}").touch()
    while not Path(gate, "go").exists():
        time.sleep(0.001)
    try:
        # Sent by this process, as a web process sends what it takes.
        engine.vote(round, user, "approve", comment=f"ok from {username}", deliver_within=30.0)
        outcome = "voted"
    except engine.AlreadyAnswered:
        outcome = "too late"
    print(json.dumps({"user": username, "outcome": outcome}))


def show(round_id: int) -> None:
    round = Round.objects.select_related("call").get(pk=round_id)
    print(
        json.dumps(
            {
                "round": round.status,
                "call": round.call.status,
                "result": (round.call.result or {}).get("structuredContent"),
                "votes": sorted(
                    Vote.objects.filter(round=round).values_list("voter__username", flat=True)
                ),
                "answered": round.call.events.filter(kind="answered").count(),
                "delivered": round.call.events.filter(kind="delivered").count(),
            }
        )
    )
