"""A server's answer that breaks a limit ends the call in a state a person can act on, through
the real start page, the API and a resubmission, against tests/peers/limits_server.py.

Delivery runs inline at commit (ImmediateBackend, transactional tests).
"""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from mrtrweb.calls import engine
from mrtrweb.calls.models import Call, Round
from mrtrweb.elicitation import field_name_for
from mrtrweb.servers.models import Connection
from tests.api.support import api_for, start
from tests.inbox.support import browser, connection, expose, operator, person

pytestmark = [pytest.mark.django_db(transaction=True)]

GO = {"go": {"action": "accept", "content": {"ok": True}}}
TOO_DEEP = "nested more than 64 levels deep"


@pytest.fixture(autouse=True)
def _inline_tasks(inline_tasks: None) -> None:
    """Answers are delivered inline."""


@pytest.fixture
def limits(limits_peer: Any) -> Connection:
    return connection(limits_peer, "limits")


def start_on_page(conn: Connection, user: Any, tool: str, **arguments: str) -> Any:
    """Post the start page's form as a browser does (the catalog is fetched on the way)."""
    web = browser(user)
    url = reverse("starting:start", kwargs={"connection": conn.name}) + f"?tool={tool}"
    assert web.get(url).status_code == 200
    data = {f"arg-{field_name_for(k)}": v for k, v in arguments.items()}
    return web, web.post(url, {**data, "start": "1"})


def parked(conn: Connection, user: Any, tool: str, **arguments: Any) -> Round:
    call = engine.start_call(
        connection=conn,
        method=Call.Method.TOOL,
        target=tool,
        arguments={"ask_first": True, **arguments},
        user=user,
    )
    return call.rounds.get(status=Round.Status.PENDING)


@pytest.mark.parametrize("sse", ["", "on"], ids=["json", "sse"])
@pytest.mark.parametrize("depth", ["100000", "950"])
def test_a_deep_result_fails_the_call_on_the_start_page(limits: Connection, depth: str, sse: str):
    otto = operator()
    arguments = {"depth": depth, **({"sse": sse} if sse else {})}
    web, response = start_on_page(limits, otto, "deep", **arguments)
    call = Call.objects.get()
    assert response.status_code == 303 and response["Location"] == call.get_absolute_url()
    assert call.status == Call.Status.FAILED and TOO_DEEP in call.error
    page = web.get(call.get_absolute_url())
    assert page.status_code == 200
    assert "The call failed" in page.content.decode()
    assert TOO_DEEP in page.content.decode()


def test_a_deep_result_fails_the_call_started_through_the_api(limits: Connection) -> None:
    ann = person("ann")
    expose(limits, "deep")
    response = start(api_for(ann), "limits", "deep", arguments={"depth": 950, "sse": True})
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["status"] == "failed" and body["finished"] is True
    assert TOO_DEEP in Call.objects.get(pk=body["id"]).error


@pytest.mark.parametrize("sse", [False, True], ids=["json", "sse"])
def test_a_deep_answer_to_a_resubmission_flags_the_round(limits: Connection, sse: bool) -> None:
    otto = operator()
    round = parked(limits, otto, "deep", depth=100_000, sse=sse)
    engine.answer(round, GO, otto)
    round.refresh_from_db()
    # The server may have acted on the answers before answering with that: an admin decides.
    assert round.status == Round.Status.UNKNOWN and TOO_DEEP in round.delivery_error
    assert round.answers == GO
    assert round.call.status == Call.Status.WAITING


# -- the guard at the engine's edge: the 500, with the depth limit raised past it ---


SERIALIZATION = "Maximum serialization depth exceeded"


@pytest.fixture
def depth_unlimited(settings: Any) -> None:
    """JSON as deep as 1000 levels is read, so a result 300 deep gets through to the engine,
    whose storing of it fails (pydantic gives up serializing at 255 levels): the issue's 500."""
    settings.MRTRWEB_MAX_JSON_DEPTH = 1000


def crash_logs(caplog: Any) -> list[Any]:
    return [r for r in caplog.records if "the exchange with the server broke" in r.getMessage()]


def test_a_result_that_cannot_be_stored_fails_the_call_not_the_page(
    limits: Connection, depth_unlimited: None, caplog: Any
) -> None:
    otto = operator()
    web, response = start_on_page(limits, otto, "deep", depth="300")
    call = Call.objects.get()
    assert response.status_code == 303 and response["Location"] == call.get_absolute_url()
    assert call.status == Call.Status.FAILED
    assert SERIALIZATION in call.error and "mrtrweb could not complete" in call.error
    assert call.events.filter(kind="failed").count() == 1
    assert len(crash_logs(caplog)) == 1  # logged once, with its traceback
    assert crash_logs(caplog)[0].exc_info is not None
    page = web.get(call.get_absolute_url())
    assert page.status_code == 200 and "The call failed" in page.content.decode()


def test_a_result_that_cannot_be_stored_fails_the_call_started_through_the_api(
    limits: Connection, depth_unlimited: None
) -> None:
    ann = person("ann")
    expose(limits, "deep")
    response = start(api_for(ann), "limits", "deep", arguments={"depth": 300})
    assert response.status_code == 201, response.content
    assert response.json()["status"] == "failed"
    assert SERIALIZATION in Call.objects.get().error


def test_an_answer_that_cannot_be_stored_flags_the_round_not_delivering(
    limits: Connection, depth_unlimited: None, caplog: Any
) -> None:
    otto = operator()
    round = parked(limits, otto, "deep", depth=300)
    engine.answer(round, GO, otto)
    round.refresh_from_db()
    assert round.status == Round.Status.UNKNOWN, round.status
    assert SERIALIZATION in round.delivery_error
    assert round.call.status == Call.Status.WAITING
    assert len(crash_logs(caplog)) == 1


# -- the watchdog and the sweep: a call left running ---------------------------------------


def test_the_sweep_fails_a_call_left_running_and_its_late_answer_is_ignored(
    limits: Connection,
) -> None:
    import threading
    import time
    from datetime import timedelta

    from django.db import connection as db
    from django.utils import timezone

    otto = operator()
    done = threading.Event()

    def run() -> None:
        try:
            engine.start_call(
                connection=limits,
                method=Call.Method.TOOL,
                target="progress",
                arguments={"every": 0.2, "finish_after": 2},
                user=otto,
            )
        finally:
            db.close()
            done.set()

    threading.Thread(target=run, daemon=True).start()
    # Until it is claimed for sending, a call is not stuck but unsent (the sweep sends those).
    while not Call.objects.filter(sent_at__isnull=False).exists():
        time.sleep(0.02)
    call = Call.objects.get()
    assert call.status == Call.Status.RUNNING
    # Not due yet: nothing happens (a live sender is never failed).
    assert engine.run_due()["failed"] == 0
    # Past its deadline (as if its sender died): the sweep fails it, with a plain message.
    later = timezone.now() + engine.call_stuck_after(limits) + timedelta(seconds=1)
    assert engine.run_due(now=later)["failed"] == 1
    call.refresh_from_db()
    assert call.status == Call.Status.FAILED and "got no answer by" in call.error
    assert done.wait(20)
    # The sender was alive after all: its answer came, and the call stays failed.
    call.refresh_from_db()
    assert call.status == Call.Status.FAILED and call.result is None
    assert call.events.filter(kind="late_answer_ignored").exists()
    assert call.events.filter(kind="failed").count() == 1


# -- the answer deadline, per connection ----------------------------------------------------


def test_a_server_sending_only_keepalives_fails_the_call_at_the_deadline(
    limits_peer: Any,
) -> None:
    import time

    conn = connection(limits_peer, "slow", answer_deadline=2.0, answer_deadline_max=10.0)
    otto = operator()
    started = time.monotonic()
    _, response = start_on_page(conn, otto, "keepalive", every="0.5")
    took = time.monotonic() - started
    call = Call.objects.get()
    assert response.status_code == 303
    assert call.status == Call.Status.FAILED, call.status
    assert "The server did not answer within 2 s" in call.error
    assert took < 10, took  # not held by the keep-alives (the catalog fetch included)


def test_progress_forever_fails_the_call_at_the_cap(limits_peer: Any) -> None:
    conn = connection(limits_peer, "chatty", answer_deadline=1.0, answer_deadline_max=3.0)
    call = engine.start_call(
        connection=conn,
        method=Call.Method.TOOL,
        target="progress",
        arguments={"every": 0.5},
        user=operator(),
    )
    assert call.status == Call.Status.FAILED
    assert "did not finish within 3 s" in call.error


def test_a_resubmission_past_the_deadline_is_flagged_not_left_delivering(
    limits_peer: Any,
) -> None:
    conn = connection(limits_peer, "slow", answer_deadline=2.0, answer_deadline_max=10.0)
    otto = operator()
    round = parked(conn, otto, "keepalive", every=0.5)
    engine.answer(round, GO, otto)
    round.refresh_from_db()
    assert round.status == Round.Status.UNKNOWN, round.status
    assert "The server did not answer within 2 s" in round.delivery_error
    assert round.call.status == Call.Status.WAITING


# -- redirects -------------------------------------------------------------------------------


def test_a_redirect_fails_the_call_saying_where_to(limits: Connection) -> None:
    elsewhere = "https://moved.example/mcp"
    _, response = start_on_page(limits, operator(), "redirect", location=elsewhere)
    call = Call.objects.get()
    assert response.status_code == 303 and call.status == Call.Status.FAILED
    assert f"The server redirected to {elsewhere}; redirects are not followed" in call.error
    assert "invalid JSON" not in call.error


def test_a_redirected_resubmission_can_be_retried(limits: Connection) -> None:
    otto = operator()
    round = parked(limits, otto, "redirect", location="https://moved.example/mcp")
    engine.answer(round, GO, otto)
    round.refresh_from_db()
    # Nothing ran: a person may retry once the operator has fixed the URL.
    assert round.status == Round.Status.FAILED
    assert "redirected to https://moved.example/mcp" in round.delivery_error
