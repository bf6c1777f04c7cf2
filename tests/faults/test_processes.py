"""Faults with real processes: a server that refuses, is busy, stalls, drops the connection or
answers garbage, and the web process and the task worker killed with SIGKILL mid-flow.

Every scenario answers rounds through the web process as a person does (the round's form,
CSRF and all), lets the separate ``db_worker`` deliver them, and then counts from the flaky
server's own record (``Peer.recorded()``: only requests it really handled) and the database:

- answers lost: rounds whose answers are not stored exactly as posted (must be 0);
- duplicate resubmissions: a round's answers handled by the server more than once without an
  admin choosing to resend them or the tool declaring ``idempotentHint`` (must be 0);
- rounds recovered: rounds delivered after a fault.

The totals are printed at the end of the run (``fault report``).
"""

from __future__ import annotations

import threading
import time
from typing import Any

import httpx
import pytest

from tests.faults.conftest import ADMIN, FAULT_REPORT, PERSON, REPORT_LINES, Stack

ANSWER = {"action": "accept", "content": {"sure": True}}
SETTLED = {"delivered", "unknown", "failed", "cancelled", "expired"}


def expected_answers(round: dict[str, Any]) -> dict[str, Any]:
    return {key: ANSWER for key in round["keys"]}


def score(
    stack: Stack,
    scenario: str,
    rounds: list[dict[str, Any]],
    *,
    posted: set[int] | None = None,
    may_repeat: set[int] = frozenset(),  # type: ignore[assignment]
    admin_resends: int = 0,
    idempotent: bool = False,
    faulted: bool = True,
) -> dict[str, int]:
    """Count the scenario's figures, add them to the report, and return them."""
    ids = [r["round"] for r in rounds]
    rows = stack.rounds(ids)
    handled = stack.flaky.resubmissions_by_state()
    posted = posted if posted is not None else set(ids)
    lost = sum(
        1
        for r in rounds
        if r["round"] in posted and rows[r["round"]]["answers"] != expected_answers(r)
    )
    allowed = {rid: (2 if rid in may_repeat or idempotent else 1) for rid in ids}
    duplicates = sum(max(0, handled[rows[rid]["sha"]] - allowed[rid]) for rid in ids)
    extra = sum(max(0, handled[rows[rid]["sha"]] - 1) for rid in ids)
    figures = {
        "attempted": len(ids),
        "lost": lost,
        "duplicates": duplicates,
        # Delivered after a fault (the baseline's rounds met none, so they recover nothing).
        "recovered": sum(rows[rid]["status"] == "delivered" for rid in ids) if faulted else 0,
        "flagged": 0,
        "admin_resends": admin_resends,
        "idempotent_resends": extra if idempotent else 0,
    }
    assert len({rows[rid]["sha"] for rid in ids}) == len(ids), "requestStates must differ"
    REPORT_LINES.append(
        f"{scenario}: rounds attempted {figures['attempted']}, answers lost {lost}, duplicate "
        f"resubmissions {duplicates}, rounds recovered {figures['recovered']}"
        + (f", admin resends {admin_resends}" if admin_resends else "")
        + (f", idempotent resends {figures['idempotent_resends']}" if idempotent else "")
    )
    FAULT_REPORT.update(figures)
    return figures


def answer_all(stack: Stack, person: httpx.Client, rounds: list[dict[str, Any]]) -> None:
    for r in rounds:
        response = stack.answer(person, r["round"])
        assert response.status_code == 303, response.text[:1000]


@pytest.fixture
def person(stack: Stack) -> httpx.Client:
    return stack.client(PERSON)


@pytest.fixture
def admin(stack: Stack) -> httpx.Client:
    return stack.client(ADMIN)


@pytest.fixture(autouse=True)
def _no_fault(stack: Stack) -> None:
    stack.flaky.fault(None)


def test_a_posted_answer_is_delivered_promptly_by_the_worker(
    stack: Stack, person: httpx.Client
) -> None:
    """No fault: the baseline. The worker polls every 0.1 s, so delivery starts at once.

    "At once" is under 4 s: well before the safety net's first look (5 s after the answer,
    calls.handoff.GRACE), so an answer left to the net fails here, while the first
    answer of a cold stack on a busy machine passes (it took 2.007 s in a clean clone)."""
    rounds = stack.start_calls("confirm_delete", 3)
    latencies = []
    for r in rounds:
        posted = time.monotonic()
        answer_all(stack, person, [r])
        stack.wait_for([r["round"]], {"delivered"}, timeout=10)
        latencies.append(time.monotonic() - posted)
    assert max(latencies) < 4.0, latencies
    figures = score(stack, "no fault (baseline)", rounds, faulted=False)
    assert figures["lost"] == 0 and figures["duplicates"] == 0
    REPORT_LINES.append(
        "   (answer posted -> delivered: "
        + ", ".join(f"{int(latency * 1000)} ms" for latency in latencies)
        + ")"
    )


def test_a_busy_server_503_then_429_is_retried_until_it_recovers(
    stack: Stack, person: httpx.Client
) -> None:
    rounds = stack.start_calls("confirm_delete", 3)
    stack.flaky.fault("503", times=3)
    answer_all(stack, person, rounds)
    rows = stack.wait_for([r["round"] for r in rounds], {"delivered"})
    assert sum(row["attempts"] for row in rows.values()) == 3 + 3

    more = stack.start_calls("confirm_delete", 2)
    stack.flaky.fault("429", times=2, retry_after=1)
    answer_all(stack, person, more)
    started = time.monotonic()
    rows = stack.wait_for([r["round"] for r in more], {"delivered"})
    assert time.monotonic() - started >= 1.0  # Retry-After: 1 was honoured
    figures = score(stack, "busy (503, 429 + Retry-After)", rounds + more)
    assert figures["lost"] == 0 and figures["duplicates"] == 0
    assert figures["recovered"] == 5


def test_a_refusing_server_is_retried_until_it_is_back(stack: Stack, person: httpx.Client) -> None:
    rounds = stack.start_calls("confirm_delete", 3)
    stack.flaky.stop()  # its port is closed: every connection is refused
    answer_all(stack, person, rounds)
    time.sleep(1.0)
    rows = stack.rounds([r["round"] for r in rounds])
    assert all(row["status"] in {"submitted", "delivering"} for row in rows.values()), rows
    assert any("NotDelivered" in row["error"] for row in rows.values()), rows
    stack.flaky.start()
    stack.wait_for([r["round"] for r in rounds], {"delivered"})
    figures = score(stack, "refused (port closed), then back", rounds)
    assert figures["lost"] == 0 and figures["duplicates"] == 0
    assert figures["recovered"] == 3


def test_unknown_outcomes_are_never_resent_blindly(
    stack: Stack, person: httpx.Client, admin: httpx.Client
) -> None:
    rounds = stack.start_calls("confirm_delete", 3)
    for r, fault in zip(rounds, ["stall", "drop", "garbage"], strict=True):
        stack.flaky.fault(fault)
        answer_all(stack, person, [r])
        stack.wait_for([r["round"]], {"unknown"})
    time.sleep(1.5)  # time enough for any (wrong) automatic resend
    rows = stack.rounds([r["round"] for r in rounds])
    assert {row["status"] for row in rows.values()} == {"unknown"}
    handled = stack.flaky.resubmissions_by_state()
    assert [handled[row["sha"]] for row in rows.values()] == [1, 1, 1]
    FAULT_REPORT["flagged"] += 3
    # The admin sees them and decides: resend the garbage one, abandon the other two.
    resend, *abandon = [r["round"] for r in reversed(rounds)]
    assert stack.admin_act(admin, "resend", resend).status_code == 303
    for round_id in abandon:
        assert stack.admin_act(admin, "abandon", round_id).status_code == 303
    rows = stack.wait_for([r["round"] for r in rounds], {"delivered", "cancelled"})
    assert rows[resend]["status"] == "delivered"
    figures = score(
        stack,
        "outcome unknown (stall, drop, garbage), flagged",
        rounds,
        may_repeat={resend},
        admin_resends=1,
    )
    assert figures["lost"] == 0 and figures["duplicates"] == 0


def test_an_idempotent_tool_is_resent_once_after_a_broken_answer(
    stack: Stack, person: httpx.Client
) -> None:
    rounds = stack.start_calls("set_flag", 2)
    for r in rounds:  # one at a time: the fault hits each round's first attempt only
        stack.flaky.fault("drop")
        answer_all(stack, person, [r])
        stack.wait_for([r["round"]], {"delivered"})
    figures = score(stack, "idempotent tool, dropped answer", rounds, idempotent=True)
    assert figures["lost"] == 0 and figures["duplicates"] == 0
    assert figures["idempotent_resends"] == 2


def test_the_worker_killed_mid_delivery(
    stack: Stack, person: httpx.Client, admin: httpx.Client
) -> None:
    rounds = stack.start_calls("confirm_delete", 2)
    first, second = (r["round"] for r in rounds)
    # The first resubmission waits 2.5 s before the server handles it: the worker dies first.
    stack.flaky.fault("slow", times=1, delay=2.5)
    answer_all(stack, person, rounds)
    deadline = time.monotonic() + 20
    while stack.rounds([first])[first]["status"] != "delivering":
        assert time.monotonic() < deadline, stack.rounds([first, second])
        time.sleep(0.02)
    stack.kill("worker")
    rows = stack.rounds([first, second])
    assert rows[first]["status"] == "delivering" and rows[second]["status"] == "submitted"

    stack.start_worker()
    # The queued one is delivered; the one in flight is flagged by its watchdog (its sender
    # may have sent it), never resent blindly.
    rows = stack.wait_for([first, second], {"delivered", "unknown"}, timeout=60)
    assert rows[second]["status"] == "delivered"
    assert rows[first]["status"] == "unknown", rows
    assert stack.flaky.resubmissions_by_state()[rows[first]["sha"]] == 0
    FAULT_REPORT["flagged"] += 1
    assert stack.admin_act(admin, "resend", first).status_code == 303
    stack.wait_for([first], {"delivered"})
    figures = score(stack, "worker SIGKILLed mid-delivery", rounds, admin_resends=1)
    assert figures["lost"] == 0 and figures["duplicates"] == 0
    assert figures["recovered"] == 2


def test_the_worker_killed_with_deliveries_queued(stack: Stack, person: httpx.Client) -> None:
    rounds = stack.start_calls("confirm_delete", 3)
    stack.kill("worker")
    answer_all(stack, person, rounds)  # answered and queued, with nobody to deliver them
    time.sleep(0.5)
    rows = stack.rounds([r["round"] for r in rounds])
    assert {row["status"] for row in rows.values()} == {"submitted"}
    stack.start_worker()
    stack.wait_for([r["round"] for r in rounds], {"delivered"})
    figures = score(stack, "worker SIGKILLed, deliveries queued", rounds)
    assert figures["lost"] == 0 and figures["duplicates"] == 0
    assert figures["recovered"] == 3


def test_the_web_process_killed_while_answers_are_posted(stack: Stack) -> None:
    rounds = stack.start_calls("confirm_delete", 6)
    ids = [r["round"] for r in rounds]
    # Each person's browser has the form open (one session each, as six tabs would).
    clients = {rid: stack.client(PERSON) for rid in ids}
    forms = {rid: stack.answer_form(clients[rid], rid) for rid in ids}
    outcomes: dict[int, int | str] = {}

    def post(round_id: int) -> None:
        try:
            response = clients[round_id].post(f"/rounds/{round_id}/", data=forms[round_id])
            outcomes[round_id] = response.status_code
        except httpx.HTTPError as exc:
            outcomes[round_id] = type(exc).__name__

    for round_id in ids[:3]:
        post(round_id)
    # Mid-flow: the other three are on their way when the web process dies.
    threads = [threading.Thread(target=post, args=(rid,)) for rid in ids[3:]]
    for thread in threads:
        thread.start()
    time.sleep(0.02)
    stack.kill("web")
    for thread in threads:
        thread.join()
    stack.start_web()
    confirmed = {rid for rid, outcome in outcomes.items() if outcome == 303}
    assert set(ids[:3]) <= confirmed, outcomes
    # What a person does after an error page: open the round again; answer it if it still
    # asks (an answer that was stored says so instead).
    again = stack.client(PERSON)
    for round_id in ids:
        if round_id not in confirmed and stack.rounds([round_id])[round_id]["status"] == "pending":
            assert stack.answer(again, round_id).status_code == 303
    stack.wait_for(ids, {"delivered"})
    figures = score(stack, "web SIGKILLed while answers were posted", rounds)
    assert figures["lost"] == 0 and figures["duplicates"] == 0
    assert figures["recovered"] == 6
    REPORT_LINES.append(
        f"   (posts confirmed before the kill: {len(confirmed)}; cut off: "
        f"{', '.join(str(outcomes.get(rid)) for rid in ids if rid not in confirmed) or 'none'})"
    )


def test_an_answer_is_sent_by_the_web_process_that_took_it(
    stack: Stack, person: httpx.Client
) -> None:
    """With no worker at all: the web process delivers while the page waits, so the round is
    delivered by the time the person's redirect arrives."""
    rounds = stack.start_calls("confirm_delete", 3)
    stack.kill("worker")
    try:
        with stack.hand_off(answer_wait=5):
            latencies = []
            for r in rounds:
                posted = time.monotonic()
                answer_all(stack, person, [r])
                latencies.append(time.monotonic() - posted)
                row = stack.rounds([r["round"]])[r["round"]]
                assert row["status"] == "delivered" and row["call"] == "completed", row
    finally:
        stack.start_worker()
    figures = score(stack, "answers sent by the web process itself", rounds, faulted=False)
    assert figures["lost"] == 0 and figures["duplicates"] == 0
    REPORT_LINES.append(
        "   (answer posted -> page back, delivered: "
        + ", ".join(f"{int(latency * 1000)} ms" for latency in latencies)
        + ")"
    )


def test_the_web_process_killed_mid_delivery(
    stack: Stack, person: httpx.Client, admin: httpx.Client
) -> None:
    """The web process dies while its delivery thread waits on the server: the watchdog flags
    the round (the server may have acted), and the answer's safety net, once due, does not
    send it again: an admin decides."""
    rounds = stack.start_calls("confirm_delete", 1)
    (first,) = (r["round"] for r in rounds)
    with stack.hand_off(answer_wait=0):
        # The resubmission waits 2.5 s before the server handles it: the web process dies first.
        stack.flaky.fault("slow", times=1, delay=2.5)
        answer_all(stack, person, rounds)
        deadline = time.monotonic() + 20
        while stack.rounds([first])[first]["status"] != "delivering":
            assert time.monotonic() < deadline, stack.rounds([first])
            time.sleep(0.02)
        stack.kill("web")
        assert stack.rounds([first])[first]["status"] == "delivering"
        stack.start_web()
        rows = stack.wait_for([first], {"delivered", "unknown"}, timeout=60)
        assert rows[first]["status"] == "unknown", rows
        time.sleep(6)  # past the safety net's due time (5 s after the answer)
        row = stack.rounds([first])[first]
        assert row["status"] == "unknown" and row["attempts"] == 1, row
        assert stack.flaky.resubmissions_by_state()[row["sha"]] == 0
        FAULT_REPORT["flagged"] += 1
        assert stack.admin_act(admin, "resend", first).status_code == 303
        stack.wait_for([first], {"delivered"})
    figures = score(stack, "web SIGKILLed mid-delivery (its own)", rounds, admin_resends=1)
    assert figures["lost"] == 0 and figures["duplicates"] == 0
    assert figures["recovered"] == 1
