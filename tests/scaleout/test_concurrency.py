"""50 people post the same round at once through two web processes sharing PostgreSQL: exactly
one resubmission reaches the server, and the 49 others are told who answered it first."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import pytest

from mrtrweb.elicitation import field_name_for, prefix_for_key
from tests.peers.fixtures import Peer
from tests.scaleout.conftest import Topology, run_apart, start_call
from tests.support.web import csrf_token

POSTS = 50


def _answers(name: str) -> dict[str, str]:
    return {
        "action": "accept",
        f"{prefix_for_key('name')}-{field_name_for('name')}": name,
        # Choices are posted by their index: "2" is blue.
        f"{prefix_for_key('color')}-{field_name_for('color')}": "2",
    }


def _retries(peer: Peer, since: int) -> list[dict[str, Any]]:
    """The tools/call requests that carried answers back (resubmissions)."""
    return [
        entry
        for entry in peer.recorded(since)
        if (entry["json"] or {}).get("method") == "tools/call"
        and "inputResponses" in entry["json"].get("params", {})
    ]


Outcome = tuple[str, int, str, float]  # who posted, status, body, seconds


async def _race(topology: Topology, round_id: int) -> tuple[list[Outcome], float]:
    """Open the round page in every session, then post all the forms at the same moment;
    returns each post's outcome and how long all of them took."""
    sessions = [(username, key) for username, keys in topology.sessions.items() for key in keys][
        :POSTS
    ]
    assert len(sessions) == POSTS
    bases = [topology.url_a if n % 2 == 0 else topology.url_b for n in range(POSTS)]
    limits = httpx.Limits(max_connections=1)
    clients = [
        httpx.AsyncClient(base_url=base, cookies={"sessionid": key}, timeout=60.0, limits=limits)
        for base, (_, key) in zip(bases, sessions, strict=True)
    ]
    try:
        pages = await asyncio.gather(*(c.get(f"/rounds/{round_id}/") for c in clients))
        for page in pages:
            assert page.status_code == 200, page.text[:2000]
        go = asyncio.Event()

        async def post(n: int, client: httpx.AsyncClient, token: str) -> Outcome:
            data = {**_answers(f"person-{n}"), "csrfmiddlewaretoken": token}
            await go.wait()
            started = time.monotonic()
            response = await client.post(f"/rounds/{round_id}/", data=data)
            return sessions[n][0], response.status_code, response.text, time.monotonic() - started

        racers = [
            asyncio.create_task(post(n, client, csrf_token(page.text)))
            for n, (client, page) in enumerate(zip(clients, pages, strict=True))
        ]
        await asyncio.sleep(0.05)  # every racer is waiting at the line
        started = time.monotonic()
        go.set()
        outcomes = await asyncio.gather(*racers)
        return outcomes, time.monotonic() - started
    finally:
        await asyncio.gather(*(c.aclose() for c in clients))


def _call_status(topology: Topology, call_id: int) -> str:
    with topology.db() as db:
        return db.execute("SELECT status FROM calls_call WHERE id = %s", (call_id,)).fetchone()[0]


def test_fifty_concurrent_posts_of_one_round_resubmit_once(
    topology: Topology, fastmcp_process_peer: Peer, capsys: pytest.CaptureFixture[str]
) -> None:
    caller_session = topology.sessions["carol"][0]
    call_id, round_id = start_call(topology.url_a, caller_session, "two_questions")
    since = fastmcp_process_peer.mark()

    started = time.monotonic()
    outcomes, raced = run_apart(_race(topology, round_id))

    statuses = sorted(status for _, status, _, _ in outcomes)
    assert statuses == [303] + [409] * (POSTS - 1), statuses
    for _, status, body, _ in outcomes:
        if status == 409:
            # calls/taken.html: who answered first, and what this person typed, kept.
            assert "Already answered by" in body or "You already answered" in body, body[-800:]
            assert "Your answers were not sent" in body
    winner = next(user for user, status, _, _ in outcomes if status == 303)

    # The winner's web process delivers the one answer; wait for the result, then past the
    # answer's safety net (due 5 s later, run by the worker), so a duplicate resubmission
    # would have time to arrive.
    deadline = time.monotonic() + 30
    while _call_status(topology, call_id) != "completed" and time.monotonic() < deadline:
        topology.check_alive()
        time.sleep(0.1)
    delivered = time.monotonic() - started
    assert _call_status(topology, call_id) == "completed"
    time.sleep(6.0)

    retries = _retries(fastmcp_process_peer, since)
    assert len(retries) == 1, [r["body"] for r in retries]
    sent_name = retries[0]["json"]["params"]["inputResponses"]["name"]["content"]["name"]
    with topology.db() as db:
        answered = db.execute(
            "SELECT count(*) FROM calls_event WHERE round_id = %s AND kind = 'answered'",
            (round_id,),
        ).fetchone()[0]
        answered_by = db.execute(
            "SELECT u.username, r.answers FROM calls_round r "
            "JOIN auth_user u ON u.id = r.answered_by_id WHERE r.id = %s",
            (round_id,),
        ).fetchone()
    assert answered == 1
    # The answer that reached the server is the one the winner posted, and is the one kept.
    assert answered_by[0] == winner
    assert answered_by[1]["name"]["content"]["name"] == sent_name

    slowest = max(seconds for *_, seconds in outcomes)
    with capsys.disabled():
        print(
            f"\n[scale-out] {topology.report()}\n"
            f"[concurrency] {POSTS} concurrent posts of round {round_id}, half to A, half to "
            f"B, answered in {raced:.2f}s (slowest {slowest:.2f}s): 1 accepted ({winner}), "
            f"{statuses.count(409)} told 'already answered'; resubmissions the server saw: "
            f"{len(retries)}; result stored {delivered:.2f}s after the test began"
        )
