"""A split round in Chromium: a tool asks a budget and a schedule in one round, the
tool's policy routes the budget to Ann and the schedule to Bob. Each finds only their part in
their inbox and on the round page, answers it, and the server gets both answers in one retry.
Every page on the way passes axe. (That nobody else sees a part, 404, is proved without a
browser: tests/calls/engine/test_split.py.)

With ``MRTRWEB_SCREENSHOTS=docs/images`` it takes the pictures of docs/approval-policies.md.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import pytest

from tests.peers.fixtures import Peer

from .conftest import LiveApp, assert_accessible, expect, shoot

if TYPE_CHECKING:
    from playwright.sync_api import Page

pytestmark = pytest.mark.browser

TOOL = "plan_budget_schedule"
BUDGET_Q = "Budget for Atlas?"
SCHEDULE_Q = "When does Atlas start?"
DELIVERY_TIMEOUT = 20_000

_POLICY = """
from mrtrweb.policies.models import Policy
from mrtrweb.servers.models import Connection
Policy.objects.update_or_create(
    connection=Connection.objects.get(name={connection!r}), tool_name={tool!r},
    defaults={{"split_routes": {{"budget": {{"user": "ann"}}, "schedule": {{"user": "bob"}}}}}},
)
"""


def _retries(peer: Peer, since: int) -> list[dict[str, Any]]:
    return [
        entry["json"]["params"]
        for entry in peer.recorded(since)
        if (entry["json"] or {}).get("method") == "tools/call"
        and "inputResponses" in entry["json"].get("params", {})
    ]


def _part_from_inbox(page: Page, question: str, other: str, key: str) -> None:
    page.goto("/inbox/")
    item = page.locator("li.inbox-item").filter(has_text=question)
    expect(item).to_contain_text(f"Your part: {key}")
    expect(page.locator("#inbox-pending")).not_to_contain_text(other)
    assert_accessible(page)
    item.get_by_role("link", name=question).click()
    page.wait_for_load_state()
    expect(page.get_by_role("heading", level=1)).to_have_text("The server needs your input")
    expect(page.locator("#split-part")).to_contain_text(f"only the {key} part")
    expect(page.locator("main")).not_to_contain_text(other)
    assert_accessible(page)


# Two people sign in through the login page (password hashing is slow on purpose).
@pytest.mark.timeout(240)
def test_two_people_answer_their_own_parts_of_one_round(
    live_app: LiveApp,
    peer_connection: str,
    fastmcp_process_peer: Peer,
    page_as: Any,
    signed_in_page: Page,
) -> None:
    live_app.shell(_POLICY.format(connection=peer_connection, tool=TOOL))
    # The caller starts the call: both questions go to others.
    page = signed_in_page
    page.goto(f"/calls/start/{peer_connection}/?tool={TOOL}")
    page.get_by_role("button", name="Call the tool", exact=True).click()
    page.wait_for_load_state()
    round_url = re.sub(r"^https?://[^/]+", "", page.url)
    assert re.search(r"/rounds/\d+/$", round_url), page.url
    expect(page.locator("#split-part")).to_contain_text("each answers their own part")
    since = fastmcp_process_peer.mark()

    ann = page_as("approver_1")
    _part_from_inbox(ann, BUDGET_Q, SCHEDULE_Q, "budget")
    shoot(ann, "split-round-part")
    ann.get_by_label("Amount (EUR)").fill("5000")
    ann.get_by_role("button", name="Submit", exact=True).click()
    ann.wait_for_load_state()
    assert _retries(fastmcp_process_peer, since) == []  # the schedule is still to come
    ann.goto(round_url)
    expect(ann.locator("#split-part")).to_contain_text("parts answered 1 of 2")
    expect(ann.locator("main")).not_to_contain_text(SCHEDULE_Q)
    assert_accessible(ann)

    bob = page_as("approver_2")
    _part_from_inbox(bob, SCHEDULE_Q, BUDGET_Q, "schedule")
    bob.get_by_label("Start date").fill("2027-01-04")
    bob.get_by_role("button", name="Submit", exact=True).click()
    expect(bob).to_have_url(re.compile(r"/calls/\d+/$"), timeout=DELIVERY_TIMEOUT)
    expect(bob.locator("section.result")).to_contain_text(
        "Atlas: budget 5000, starting 2027-01-04", timeout=DELIVERY_TIMEOUT
    )
    expect(bob.locator("main")).not_to_contain_text(BUDGET_Q)
    assert_accessible(bob)

    (sent,) = _retries(fastmcp_process_peer, since)
    assert sent["inputResponses"] == {
        "budget": {"action": "accept", "content": {"amount": 5000}},
        "schedule": {"action": "accept", "content": {"start": "2027-01-04"}},
    }
