"""A split round answered by two people at the same moment, through two web processes sharing
PostgreSQL: the budget part by one person on web A, the schedule part by another on web B. The
server gets exactly one retry, carrying both answers under their keys, however the two posts
interleave."""

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

TOOL = "plan_budget_schedule"
RACES = 2
BUDGET_Q = "Budget for Atlas?"
SCHEDULE_Q = "When does Atlas start?"

# Both people are Admins in the topology (admin1, admin2); the policy routes one key to each.
_POLICY = """
from mrtrweb.policies.models import Policy
from mrtrweb.servers.models import Connection
Policy.objects.update_or_create(
    connection=Connection.objects.get(name="peer"), tool_name={tool!r},
    defaults={{"split_routes": {{"budget": {{"user": "admin1"}}, "schedule": {{"user": "admin2"}}}},
               "split_decline": "decline-round"}},
)
"""


def _retries(peer: Peer, since: int) -> list[dict[str, Any]]:
    return [
        entry["json"]["params"]
        for entry in peer.recorded(since)
        if (entry["json"] or {}).get("method") == "tools/call"
        and "inputResponses" in entry["json"].get("params", {})
        and entry["json"]["params"].get("name") == TOOL
    ]


def _field(key: str, name: str) -> str:
    return f"{prefix_for_key(key)}-{field_name_for(name)}"


async def _both_at_once(topology: Topology, round_id: int) -> list[tuple[int, str]]:
    """admin1 (web A) answers the budget and admin2 (web B) the schedule, posted together."""
    people = [
        (topology.url_a, topology.sessions["admin1"][0], {_field("budget", "amount"): "5000"}),
        (
            topology.url_b,
            topology.sessions["admin2"][0],
            {_field("schedule", "start"): "2027-01-04"},
        ),
    ]
    clients = [
        httpx.AsyncClient(base_url=base, cookies={"sessionid": key}, timeout=60.0)
        for base, key, _ in people
    ]
    try:
        pages = await asyncio.gather(*(c.get(f"/rounds/{round_id}/") for c in clients))
        for page in pages:
            assert page.status_code == 200, page.text[:2000]
        # Each sees only their own part's question.
        assert BUDGET_Q in pages[0].text and SCHEDULE_Q not in pages[0].text
        assert SCHEDULE_Q in pages[1].text and BUDGET_Q not in pages[1].text
        go = asyncio.Event()

        async def post(client: httpx.AsyncClient, page: httpx.Response, data: dict) -> Any:
            form = {**data, "action": "accept", "csrfmiddlewaretoken": csrf_token(page.text)}
            await go.wait()
            return await client.post(f"/rounds/{round_id}/", data=form)

        racers = [
            asyncio.create_task(post(client, page, data))
            for client, page, (_, _, data) in zip(clients, pages, people, strict=True)
        ]
        await asyncio.sleep(0.05)
        go.set()
        return [(r.status_code, r.text) for r in await asyncio.gather(*racers)]
    finally:
        await asyncio.gather(*(c.aclose() for c in clients))


def _status(topology: Topology, call_id: int) -> str:
    with topology.db() as db:
        return db.execute("SELECT status FROM calls_call WHERE id = %s", (call_id,)).fetchone()[0]


def test_two_parts_answered_at_once_in_two_processes_send_one_retry(
    topology: Topology, fastmcp_process_peer: Peer, capsys: pytest.CaptureFixture[str]
) -> None:
    topology.app.shell(_POLICY.format(tool=TOOL))
    caller = topology.sessions["carol"][0]
    for race in range(RACES):
        call_id, round_id = start_call(topology.url_a, caller, TOOL)
        since = fastmcp_process_peer.mark()
        outcomes = run_apart(_both_at_once(topology, round_id))
        assert [status for status, _ in outcomes] == [303, 303], [b[-800:] for _, b in outcomes]
        deadline = time.monotonic() + 30
        while _status(topology, call_id) != "completed" and time.monotonic() < deadline:
            topology.check_alive()
            time.sleep(0.1)
        assert _status(topology, call_id) == "completed"
        if race == RACES - 1:
            time.sleep(6.0)  # past the answer's safety net: a duplicate would arrive by now
        (sent,) = _retries(fastmcp_process_peer, since)
        assert sent["inputResponses"] == {
            "budget": {"action": "accept", "content": {"amount": 5000}},
            "schedule": {"action": "accept", "content": {"start": "2027-01-04"}},
        }
        with topology.db() as db:
            kinds = dict(
                db.execute(
                    "SELECT kind, count(*) FROM calls_event WHERE round_id = %s GROUP BY kind",
                    (round_id,),
                ).fetchall()
            )
        assert kinds["part_answered"] == 2 and kinds["answered"] == 1, kinds
    with capsys.disabled():
        print(
            f"\n[split] {RACES} split rounds, budget and schedule posted at once through web A "
            "and web B: one retry each, both keys"
        )
