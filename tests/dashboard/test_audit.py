"""The audit trail of a call, from real rounds: every transition, who, when, what was asked
and answered, how each resubmission came out, and the requestState only as its SHA-256."""

from __future__ import annotations

import re
from datetime import timedelta
from html import unescape
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from mrtrweb.calls import engine
from mrtrweb.calls.engine import digests
from mrtrweb.calls.models import Call, Event, Round
from mrtrweb.calls.presenting.history import trail
from mrtrweb.servers.models import Connection
from tests.dashboard.support import client_for, make_admin, make_user, text, visible_text
from tests.peers.fixtures import free_port

pytestmark = pytest.mark.django_db(transaction=True)

APPROVAL = {"approve": True, "replicas": 3, "window": "tonight", "notify": ["ops", "qa"]}


@pytest.fixture(autouse=True)
def _inline_tasks(inline_tasks: None) -> None:
    """Every test here delivers answers inline."""


@pytest.fixture
def root() -> Any:
    return make_admin("root")


@pytest.fixture
def web(root: Any) -> Client:
    return client_for(root)


@pytest.fixture
def ann() -> Any:
    return make_user("ann", "End users")


def start(peer: Any, user: Any, tool: str = "approve_deploy", **arguments: Any) -> Call:
    conn, _ = Connection.objects.get_or_create(name=f"peer-{peer.port}", defaults={"url": peer.url})
    return engine.start_call(
        connection=conn,
        method=Call.Method.TOOL,
        target=tool,
        arguments=arguments or {"service": "api"},
        user=user,
    )


def audit_url(call: Call) -> str:
    return reverse("dashboard:call_audit", kwargs={"pk": call.pk})


def entries(response: Any) -> list[str]:
    """Each event as one line of visible text, in page order."""
    items = re.findall(
        r'<li class="audit-event[^"]*"[^>]*>(.*?)</li>\s*(?=<li|</ol>)', text(response), re.S
    )
    return [re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", item))).strip() for item in items]


def assert_no_state(body: str) -> None:
    # The rows' states, read back decrypted: neither they nor any slice of them shows.
    states = [r.request_state for r in Round.objects.all() if r.request_state]
    assert states, "the test parked no round with state"
    for state in states:
        assert state not in body
        for i in range(0, len(state) - 24, 12):
            assert state[i : i + 24] not in body
    assert 'requestState":' not in body


def test_a_call_from_start_to_result(web: Client, root: Any, ann: Any, fastmcp_peer: Any) -> None:
    bob = make_user("bob")
    call = start(fastmcp_peer, ann)
    round = call.rounds.get()
    engine.reassign(round, root, user=bob)
    engine.answer(
        Round.objects.get(pk=round.pk), {"approval": {"action": "accept", "content": APPROVAL}}, bob
    )
    call.refresh_from_db()
    assert call.status == Call.Status.COMPLETED

    response = web.get(audit_url(call))
    assert response.status_code == 200
    lines = entries(response)
    kinds = [event.kind for event in trail(call)]
    assert kinds == ["started", "round_parked", "reassigned", "answered", "delivered", "completed"]
    assert len(lines) == len(kinds)
    started, parked, reassigned, answered, delivered, completed = lines

    assert "Call started" in started and "by ann" in started
    message = round.input_requests["approval"]["params"]["message"]
    assert "Round parked" in parked and "round 1" in parked and "by the system" in parked
    assert "asked approval" in parked and message in parked
    assert "Assigned to user ann" in parked
    assert f"requestState SHA-256 {round.request_state_sha256}" in parked
    assert "Reassigned" in reassigned and "by root" in reassigned and "user bob" in reassigned
    assert "answered approval accept" in answered and "by bob" in answered
    for shown in ("approve yes", "replicas 3", "window tonight", "notify ops, qa"):
        assert shown in answered, shown
    assert "Outcome: HTTP 200: accepted" in delivered
    assert "Outcome: result received" in completed
    # Times are shown to the microsecond, in order.
    stamps = re.findall(r'<time datetime="([^"]+)">', text(response))
    assert stamps == sorted(stamps)

    body = text(response)
    assert round.request_state_sha256 in body  # the round's digest, in the rounds table too
    assert_no_state(body)


def test_a_cancel_by_an_admin_is_on_the_record(
    web: Client, root: Any, ann: Any, fastmcp_peer: Any
) -> None:
    call = start(fastmcp_peer, ann)
    round = call.rounds.get()
    web.post(reverse("dashboard:bulk"), {"one": f"cancel:{round.pk}", "confirmed": "1"})
    lines = entries(web.get(audit_url(call)))
    assert [line.split(" · ")[1] for line in lines] == [
        "Call started",
        "Round parked: the server asks",
        "Answered",
        "Resubmitted: the server accepted the answers",
        "Completed",
    ]
    assert "answered approval cancel" in lines[2] and "by root" in lines[2]
    assert "Outcome: HTTP 200: accepted" in lines[3]
    assert_no_state(text(web.get(audit_url(call))))


def test_a_rejected_state_and_a_failed_delivery_show_how_the_resubmission_ended(
    web: Client, ann: Any, short_ttl_peer: Any, fastmcp_peer: Any, time_machine: Any
) -> None:
    stale = start(short_ttl_peer, ann)
    # The in-process peer's requestState lives 2 s, by the same clock.
    time_machine.move_to(timezone.now() + timedelta(seconds=2.5))
    engine.answer(stale.rounds.get(), {"approval": {"action": "accept", "content": APPROVAL}}, ann)
    stale.refresh_from_db()
    assert stale.status == Call.Status.EXPIRED
    lines = entries(web.get(audit_url(stale)))
    # "HTTP 400: " once the engine records the status of refused resubmissions.
    rejected = r"Outcome: (HTTP 400: )?the server rejected the requestState: Invalid or expired"
    assert re.search(rejected, lines[-1]), lines[-1]

    unreachable = start(fastmcp_peer, ann)
    Connection.objects.filter(pk=unreachable.connection_id).update(
        url=f"http://127.0.0.1:{free_port()}/mcp"
    )
    round = unreachable.rounds.get()
    engine.answer(
        Round.objects.select_related("call__connection").get(pk=round.pk),
        {"approval": {"action": "decline"}},
        ann,
    )
    assert Round.objects.get(pk=round.pk).status == Round.Status.FAILED
    response = web.get(audit_url(unreachable))
    failed = entries(response)[-1]
    assert "Resubmission failed" in failed and "Outcome: NotDelivered" in failed
    assert_no_state(text(response))


def test_state_only_rounds_are_listed_by_digest(web: Client, ann: Any, fastmcp_peer: Any) -> None:
    call = start(fastmcp_peer, ann, "wait_for_job", polls=2)
    assert call.status == Call.Status.COMPLETED
    retries = list(call.events.filter(kind="state_only_retry"))
    assert len(retries) == 2
    shown = visible_text(web.get(audit_url(call)))
    for event in retries:
        digest = digests.shown(event.detail["request_state_sha256"])
        assert len(digest) == 64
        assert f"requestState SHA-256 {digest}" in shown


def test_server_text_is_escaped(web: Client, root: Any) -> None:
    from tests.dashboard.support import make_connection, make_round

    round = make_round(
        connection=make_connection(), starter=root, key="k<b>", message="<img src=x>"
    )
    Event.objects.create(
        call=round.call,
        round=round,
        kind="round_parked",
        detail={
            "request_state": "LEAKED-STATE",  # never recorded by the engine; dropped all the same
            "requestState": "LEAKED-STATE",
            "note": "<i>kept</i>",
        },
    )
    body = text(web.get(audit_url(round.call)))
    assert "<img src=x>" not in body and "&lt;img src=x&gt;" in body
    assert "k&lt;b&gt;" in body
    assert "LEAKED-STATE" not in body
    assert "&lt;i&gt;kept&lt;/i&gt;" in body


def test_the_audit_is_read_only_and_for_admins(web: Client, root: Any, ann: Any) -> None:
    from tests.dashboard.support import make_connection, make_round

    round = make_round(connection=make_connection(), starter=ann)
    url = audit_url(round.call)
    for method in ("post", "put", "patch", "delete"):
        assert getattr(web, method)(url).status_code == 405, method
    assert web.get(reverse("dashboard:call_audit", kwargs={"pk": 999_999})).status_code == 404
    # The caller sees their call page, not its audit trail.
    assert client_for(ann).get(url).status_code == 403
    assert client_for(ann).get(round.call.get_absolute_url()).status_code == 200


def test_the_start_is_on_the_trail_from_the_call_row(
    web: Client, root: Any, ann: Any, fastmcp_peer: Any
) -> None:
    """The start is not stored as an event (the call row holds all of it): the trail and its
    page show it from the call, who and when exactly as the row says, first, once; an old
    call's stored start is shown as it is, not twice."""
    call = start(fastmcp_peer, ann)
    assert not call.events.filter(kind="started").exists()
    first = trail(call)[0]
    assert (first.kind, first.actor, first.created_at) == ("started", ann, call.created_at)
    assert first.detail == {"method": "tools/call", "target": "approve_deploy"}
    lines = entries(web.get(audit_url(call)))
    assert "Call started" in lines[0] and "by ann" in lines[0]
    assert "tools/call" in lines[0] and "approve_deploy" in lines[0]
    assert [line.split(" · ")[1] for line in lines].count("Call started") == 1

    # Started again (by root): the trail says from which call, as the event did.
    call.refresh_from_db()
    Call.objects.filter(pk=call.pk).update(status=Call.Status.FAILED)
    call.refresh_from_db()
    again = engine.restart(call, root)
    first = trail(again)[0]
    assert (first.kind, first.actor) == ("started", root)
    assert first.detail["restarted_from"] == call.pk
    lines = entries(web.get(audit_url(again)))
    assert "Call started" in lines[0] and "by root" in lines[0]
    assert "restarted_from" in lines[0] and str(call.pk) in lines[0]

    # A call started before the start was read from its row keeps its stored one: shown once.
    Event.objects.create(call=call, kind="started", actor=ann, detail={"method": "tools/call"})
    assert [event.kind for event in trail(call)].count("started") == 1
    lines = entries(web.get(audit_url(call)))
    assert [line.split(" · ")[1] for line in lines].count("Call started") == 1
