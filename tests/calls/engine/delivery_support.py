"""Helpers for the delivery and expiry tests: the flaky peer, parking, answering, the queue."""

from __future__ import annotations

import time
from io import StringIO
from typing import Any

import httpx
from django.core.management import call_command
from django_tasks_db.models import DBTaskResult

from mrtrweb.calls import engine
from mrtrweb.calls.models import Call, Round
from mrtrweb.servers.catalog import refresh_catalog
from mrtrweb.servers.models import Connection

CONFIRM = {"sure": True}


DATABASE_QUEUE = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}


def flaky_peer(fault_peer: Any, state_key: str) -> Any:
    """The shared flaky server of one test module, with no fault set and its record cleared."""
    peer = fault_peer("flaky", "--state-key", state_key)
    set_fault(peer, None)
    peer.clear_recorded()
    return peer


def set_fault(peer: Any, fault: str | None, times: int = 1, **extra: Any) -> None:
    httpx.post(
        f"{peer.base_url}/_peer/fault", json={"fault": fault, "times": times, **extra}
    ).raise_for_status()


def resubmissions(peer: Any) -> list[dict[str, Any]]:
    """Resubmissions the server really handled (refused ones never reach it)."""
    return [
        r for r in peer.recorded() if "inputResponses" in ((r["json"] or {}).get("params") or {})
    ]


def park(
    peer: Any, user: Any, tool: str = "confirm_delete", name: str = "", **fields: Any
) -> Round:
    conn = Connection.objects.create(name=name or f"flaky-{tool}", url=peer.url, **fields)
    refresh_catalog(conn)
    arguments = {"path": "/srv/data"} if tool == "confirm_delete" else {"name": "maintenance"}
    call = engine.start_call(
        connection=conn, method=Call.Method.TOOL, target=tool, arguments=arguments, user=user
    )
    assert call.status == Call.Status.WAITING, call.error
    return call.rounds.get()


def park_approval(peer: Any, user: Any) -> Round:
    """``approve_deploy`` started on a connection ``peer`` to ``peer`` (its catalog listed),
    its one round parked; the round comes with its call."""
    conn = Connection.objects.create(name="peer", url=peer.url)
    refresh_catalog(conn)
    call = engine.start_call(
        connection=conn,
        method=Call.Method.TOOL,
        target="approve_deploy",
        arguments={"service": "api"},
        user=user,
    )
    assert call.status == Call.Status.WAITING, call.error
    return call.rounds.select_related("call").get()


def answer(round: Round, user: Any) -> dict[str, Any]:
    (key,) = round.input_requests
    answers = {key: {"action": "accept", "content": CONFIRM}}
    engine.answer(round, answers, user)
    return answers


def run_tasks() -> None:
    """One pass of a real worker: its scheduler's tick (what is due queued or done), then the
    tasks queued."""
    engine.run_due()
    call_command("db_worker", "--batch", "--no-startup-delay", "--no-reload", stdout=StringIO())


def run_until(round: Round, *statuses: str, timeout: float = 20.0) -> Round:
    deadline = time.monotonic() + timeout
    while True:
        run_tasks()
        round.refresh_from_db()
        if round.status in statuses or time.monotonic() > deadline:
            return round
        time.sleep(0.05)


def kinds(round: Round) -> list[str]:
    return list(round.events.order_by("created_at", "id").values_list("kind", flat=True))


def queued(task: str, round: Round) -> list[DBTaskResult]:
    return [
        t
        for t in DBTaskResult.objects.filter(task_path__endswith=f".{task}", status="READY")
        if t.args_kwargs["args"][:1] == [round.pk]
    ]
