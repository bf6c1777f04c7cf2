"""A quorum round in Chromium: two of the group "Approvers" must agree. The
requester (the operator, not an approver) starts the call; the first approver's answers
become the proposal, with a comment; the second sees it read only and approves it, with a
comment; the requester's call page shows the result and both comments. axe checks every page.

The round comes from the real fastmcp peer through a connection whose policy asks for two
approvals of "Approvers"; the connection is switched off afterwards so other tests' start
pages stay as their guides show them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import pytest

from tests.peers.fixtures import Peer

from .conftest import APPROVERS, LiveApp, assert_accessible, expect, shoot

if TYPE_CHECKING:
    from playwright.sync_api import Page

# Three people's browsers through seven pages with axe on four: more than the default hang
# guard on a shared, busy machine (a hang guard, not a speed check).
pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

CONNECTION = "quorum"


@pytest.fixture(scope="module")
def quorum_connection(
    live_app: LiveApp, fastmcp_process_peer: Peer, role_people: dict[str, tuple[str, str]]
) -> Iterator[str]:
    live_app.manage("mcp_server", "add", "--name", CONNECTION, "--url", fastmcp_process_peer.url)
    live_app.shell(
        f"""
from django.contrib.auth.models import Group
from mrtrweb.policies.models import Policy
from mrtrweb.servers.models import Connection
conn = Connection.objects.get(name={CONNECTION!r})
conn.title = "Quorum"
conn.save()
Policy.objects.create(
    connection=conn, approvals_required=2, approvers_group=Group.objects.get(name={APPROVERS!r})
)
"""
    )
    try:
        yield CONNECTION
    finally:
        live_app.shell(
            f"from mrtrweb.servers.models import Connection\n"
            f"Connection.objects.filter(name={CONNECTION!r}).update(enabled=False)"
        )


def test_a_quorum_of_two_proposer_approver_and_requester(
    page_as: Callable[[str], Page],
    role_people: dict[str, tuple[str, str]],
    quorum_connection: str,
) -> None:
    requester = page_as("operator")
    requester.goto(f"/calls/start/{CONNECTION}/?tool=approve_deploy")
    requester.get_by_label("service").fill("billing")
    requester.get_by_role("button", name="Call the tool", exact=True).click()
    requester.wait_for_load_state()
    expect(requester).to_have_url(re.compile(r"/rounds/\d+/$"))
    round_url = requester.url
    # The requester is no approver: the questions read only, whom they wait for, the quorum.
    expect(requester.locator(".waiting-for")).to_contain_text(f"the group {APPROVERS}")
    expect(requester.locator(".quorum")).to_contain_text("Needs 2 approvals")
    expect(requester.get_by_role("button", name="Approve")).to_have_count(0)
    assert_accessible(requester)

    ann_name, bob_name = role_people["approver_1"][0], role_people["approver_2"][0]
    ann = page_as("approver_1")
    ann.goto("/inbox/")
    expect(ann.locator(".inbox-list")).to_contain_text("approvals 0 of 2")
    ann.goto(round_url)
    ann.get_by_label("Approve the deployment").check()
    ann.get_by_label("Replicas").fill("4")
    ann.get_by_label("Tonight at 22:00").check()
    ann.get_by_label("Comment for the requester (optional)").fill("Capacity checked <ok>")
    assert_accessible(ann)
    shoot(ann, "quorum-proposer")
    ann.get_by_role("button", name="Submit", exact=True).click()
    ann.wait_for_load_state()
    # Her answers are the proposal: the round still waits, for one more approval.
    ann.goto(round_url)
    expect(ann.locator(".quorum-state")).to_contain_text("approvals 1 of 2")
    expect(ann.locator(".quorum")).to_contain_text("These are your answers")
    expect(ann.get_by_role("button", name="Approve")).to_have_count(0)

    bob = page_as("approver_2")
    bob.goto("/inbox/")
    expect(bob.locator(".inbox-list")).to_contain_text("approvals 1 of 2")
    bob.goto(round_url)
    proposal = bob.locator(".proposal")
    expect(proposal).to_contain_text(f"Proposed by {ann_name}")
    expect(proposal).to_contain_text("Replicas")
    expect(proposal).to_contain_text("4")
    expect(proposal).to_contain_text("Tonight at 22:00")
    expect(bob.locator("form.answer-form")).to_have_count(0)  # read only: no answer form
    expect(bob.locator(".comments")).to_contain_text("Capacity checked <ok>")
    assert_accessible(bob)
    shoot(bob, "quorum-approver", at=bob.locator(".quorum"))
    bob.get_by_label("Comment for the requester (optional)").fill("Go ahead tonight")
    bob.get_by_role("button", name="Approve", exact=True).click()
    bob.wait_for_load_state()

    # The requester's call page: the result of the proposal, and both comments.
    requester.goto(round_url)
    requester.get_by_role("link", name=re.compile(r"^Call \d+$")).click()
    requester.wait_for_load_state()
    main = requester.locator("main")
    expect(main).to_contain_text("Deployed billing to staging: 4 replicas, window tonight")
    comments = requester.locator(".comments")
    expect(comments).to_contain_text(f"{ann_name} proposed answers")
    expect(comments).to_contain_text("Capacity checked <ok>")
    expect(comments).to_contain_text(f"{bob_name} approved")
    expect(comments).to_contain_text("Go ahead tonight")
    assert_accessible(requester)
    shoot(requester, "quorum-requester", at=comments)
