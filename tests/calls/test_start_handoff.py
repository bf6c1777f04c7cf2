"""Starting a call never holds the page (``engine.start_call(deliver_within=...)``).

Against the fastmcp peer in a process of its own (``fastmcp_process_peer``): the progress it
streams must arrive over a socket while the call runs. The start page sends the call on a
delivery thread and waits only ``MRTRWEB_START_WAIT``; a quick server's round or result is
there at once, a slow one's call page shows it working, with the progress the server streamed
kept for a reload, and a page that refreshes itself for people without JavaScript. The
``send_call`` task written with the call is only a safety net: it sends a call nobody sent,
never one already sent.
"""

from __future__ import annotations

import json
import time
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from mrtrweb.calls import engine, handoff
from mrtrweb.calls.models import Call
from mrtrweb.calls.presenting.history import trail
from mrtrweb.elicitation import field_name_for
from mrtrweb.live import views as live_views
from mrtrweb.servers.models import Connection
from tests.calls.engine.delivery_support import DATABASE_QUEUE, run_tasks

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def process_conn(fastmcp_process_peer: Any) -> Connection:
    return Connection.objects.create(name="peer", title="Test peer", url=fastmcp_process_peer.url)


@pytest.fixture(autouse=True)
def _hand_off(settings: Any) -> None:
    settings.TASKS = DATABASE_QUEUE
    settings.MRTRWEB_DELIVER_ON_ANSWER = True
    settings.MRTRWEB_START_WAIT = 0.5


def _start(web: Client, conn: Connection, tool: str, **arguments: str) -> Any:
    url = reverse("starting:start", kwargs={"connection": conn.name})
    assert web.get(f"{url}?tool={tool}").status_code == 200  # loads the catalog
    data = {f"arg-{field_name_for(k)}": v for k, v in arguments.items()}
    return web.post(f"{url}?tool={tool}", {**data, "start": "1"})


def _wait(call: Call, predicate: Any, timeout: float = 20.0) -> Call:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        call.refresh_from_db()
        if predicate(call):
            return call
        time.sleep(0.05)
    return call


def _pass_grace(call: Call) -> None:
    """As if the call's grace had passed since it was created (and it was due)."""
    Call.objects.filter(pk=call.pk).update(
        created_at=timezone.now() - handoff.GRACE - timedelta(seconds=1),
        watch_at=timezone.now() - timedelta(seconds=1),
    )


def _tools_calls(peer: Any, since: int) -> list[dict[str, Any]]:
    return [
        e
        for e in peer.recorded(since=since)
        if e.get("json") and e["json"].get("method") == "tools/call"
    ]


def test_a_slow_call_sends_the_person_to_its_page_at_once(
    web: Client, process_conn: Connection, fastmcp_process_peer: Any
) -> None:
    mark = fastmcp_process_peer.mark()
    began = time.monotonic()
    response = _start(web, process_conn, "slow_progress", steps="6", delay="0.5")
    took = time.monotonic() - began

    # The server takes 3 s; the page came back after about MRTRWEB_START_WAIT.
    assert took < 2.5, took
    call = Call.objects.get()
    assert response.status_code == 303 and response["Location"] == call.get_absolute_url()

    page = web.get(call.get_absolute_url())
    body = page.content.decode()
    assert call.status == Call.Status.RUNNING
    assert "The server is working on the call" in body
    # Without JavaScript the page reloads itself while the call works, soon at first.
    next_url = reverse("live:next", kwargs={"pk": call.pk}) + "?hold=1"
    assert f'<noscript><meta http-equiv="refresh" content="1; url={next_url}"></noscript>' in body

    # The progress the server streamed is kept, so a reload shows where it stands.
    call = _wait(call, lambda c: c.progress is not None)
    reloaded = web.get(call.get_absolute_url()).content.decode()
    assert f'<progress id="live-progress-{call.pk}-bar" max="6"' in reloaded
    assert "of 6</span>" in reloaded

    call = _wait(call, lambda c: c.status != Call.Status.RUNNING)
    assert call.status == Call.Status.COMPLETED
    done = web.get(call.get_absolute_url()).content.decode()
    assert "done after 6 steps" in done
    assert "http-equiv" not in done and "live-progress-" not in done

    # The scheduler, once the call is due, finds it sent and sends nothing: one tools/call.
    _pass_grace(call)
    run_tasks()
    assert not DBTaskResult.objects.filter(task_path__endswith=".send_call").exists()
    assert len(_tools_calls(fastmcp_process_peer, mark)) == 1
    assert [event.kind for event in trail(call)].count("started") == 1


def test_without_javascript_the_waiting_page_leads_to_the_first_round(
    web: Client, process_conn: Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A busy process: the start page came back before the call was sent.
    monkeypatch.setattr(handoff, "start", lambda work, call_id: None)
    response = _start(web, process_conn, "approve_deploy", service="api")
    call = Call.objects.get()
    next_url = reverse("live:next", kwargs={"pk": call.pk}) + "?hold=1"
    assert response["Location"] == call.get_absolute_url()
    page = web.get(call.get_absolute_url()).content.decode()
    assert f'<meta http-equiv="refresh" content="1; url={next_url}">' in page
    # While it is still on its way, the reload is held, then comes back to the call page
    # (tests/live/test_next.py: it is let go as soon as the server asks).
    monkeypatch.setattr(live_views, "HOLD_SECONDS", 0.3)
    assert web.get(next_url)["Location"] == call.get_absolute_url()
    # A call started a while ago (a long one): the page reloads less often.
    Call.objects.filter(pk=call.pk).update(updated_at=timezone.now() - timedelta(minutes=1))
    page = web.get(call.get_absolute_url()).content.decode()
    assert f'<meta http-equiv="refresh" content="3; url={next_url}">' in page

    # The server asked, even while the page was on its way: the call page reloads once more,
    # and the reload lands on the round, no click.
    engine.send_call(call.pk)
    (round,) = Call.objects.get().rounds.all()
    page = web.get(call.get_absolute_url()).content.decode()
    assert f'<meta http-equiv="refresh" content="1; url={next_url}">' in page
    assert web.get(next_url)["Location"] == round.get_absolute_url()
    # Not for ever: a round parked a while ago leaves the call page where it is.
    round.__class__.objects.filter(pk=round.pk).update(
        created_at=timezone.now() - timedelta(minutes=1)
    )
    assert "http-equiv" not in web.get(call.get_absolute_url()).content.decode()


def test_a_quick_server_lands_the_person_on_the_first_round(
    web: Client, process_conn: Connection
) -> None:
    response = _start(web, process_conn, "approve_deploy", service="api")
    call = Call.objects.get()
    assert call.status == Call.Status.WAITING
    (round,) = call.rounds.all()
    assert response.status_code == 303 and response["Location"] == round.get_absolute_url()


def test_a_quick_result_is_shown_at_once(web: Client, process_conn: Connection) -> None:
    response = _start(web, process_conn, "echo", text="hello")
    call = Call.objects.get()
    assert call.status == Call.Status.COMPLETED
    assert response["Location"] == call.get_absolute_url()
    assert "hello" in web.get(call.get_absolute_url()).content.decode()


def test_the_safety_net_sends_a_call_its_process_never_sent(
    web: Client,
    process_conn: Connection,
    fastmcp_process_peer: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The process dies between committing the call and starting its delivery thread.
    monkeypatch.setattr(handoff, "start", lambda work, call_id: None)
    mark = fastmcp_process_peer.mark()
    response = _start(web, process_conn, "echo", text="late")
    call = Call.objects.get()
    assert response["Location"] == call.get_absolute_url()
    assert call.status == Call.Status.RUNNING and call.sent_at is None
    assert "The server is working on the call" in web.get(call.get_absolute_url()).content.decode()

    # Not before it is due (the live process may still be about to send it): its grace
    # after it was created.
    assert call.watch_at == call.created_at + handoff.GRACE
    run_tasks()
    assert Call.objects.get().sent_at is None

    _pass_grace(call)
    run_tasks()
    call.refresh_from_db()
    assert call.status == Call.Status.COMPLETED and call.sent_at is not None
    assert len(_tools_calls(fastmcp_process_peer, mark)) == 1
    # Within its grace a call is left to its own process, past it sent once, then never again.
    assert engine.run_due()["requeued"] == 0
    run_tasks()
    assert len(_tools_calls(fastmcp_process_peer, mark)) == 1


def test_a_call_is_sent_once_however_many_try(process_conn: Connection, ada: Any) -> None:
    call = engine.start_call(
        connection=process_conn,
        method=Call.Method.TOOL,
        target="echo",
        arguments={"text": "x"},
        user=ada,
    )
    assert call.status == Call.Status.COMPLETED and call.sent_at is not None
    before = call.events.count()
    engine.send_call(call.pk)  # a late safety net, or a second thread: nothing happens
    assert call.events.count() == before


def test_the_sweep_sends_a_call_whose_process_and_task_were_both_lost(
    web: Client,
    process_conn: Connection,
    fastmcp_process_peer: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(handoff, "start", lambda work, call_id: None)
    _start(web, process_conn, "echo", text="swept")
    call = Call.objects.get()
    assert call.sent_at is None

    # Not while its own process may still send it; then sent, never failed.
    assert engine.run_due()["requeued"] == 0
    later = timezone.now() + timedelta(minutes=5)
    counts = engine.run_due(now=later)
    assert counts["requeued"] == 1 and counts["failed"] == 0
    run_tasks()
    call.refresh_from_db()
    assert call.status == Call.Status.COMPLETED and "swept" in json.dumps(call.result)
