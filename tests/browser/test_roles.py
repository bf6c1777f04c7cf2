"""Each role's daily work, in Chromium, against the real app, worker and a real MCP peer.

One story, told in order because each step needs the one before: an operator adds a connection
to the fastmcp peer, tests it and exposes ``approve_deploy`` with its rounds routed to the group
"Approvers"; an end user (no operator) starts the tool; one approver claims and answers the
round, and the other no longer sees it; the requester reads the result; an admin filters the
dashboard, reassigns one pending round, cancels another and reads the audit trail.

Fields are found by their labels and buttons by their names; axe-core checks each main page.
With ``MRTRWEB_SCREENSHOTS=docs/images`` the screens are saved for docs/operator-guide.md and
docs/admin-guide.md (``operator-*``, ``inbox-*``, ``admin-*``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest

from tests.peers.fixtures import Peer, free_port

from .conftest import (
    APPROVER_1,
    APPROVERS,
    END_USER,
    ROLE_ADMIN,
    LiveApp,
    assert_accessible,
    expect,
    shoot,
)

if TYPE_CHECKING:
    from playwright.sync_api import Locator, Page

pytestmark = pytest.mark.browser

DELIVERY_TIMEOUT = 20_000
CONNECTION = "deploys"
TITLE = "Deploy approvals"
TOKEN = "browser-secret-token-7f3a"
HEADER_VALUE = "header-secret-value-91c2"


def _press(page: Page, name: str) -> None:
    page.get_by_role("button", name=name, exact=True).click()
    page.wait_for_load_state()


def _exposure_row(page: Page, tool: str) -> Locator:
    return page.locator("li.exposure").filter(
        has=page.locator(".exposure-tool code", has_text=re.compile(rf"^{tool}$"))
    )


def _inbox_item(page: Page, question: str) -> Locator:
    return page.locator("li.inbox-item").filter(has_text=question)


def _start_deploy(page: Page, service: str) -> str:
    """As an end user: start approve_deploy on the operators' connection; returns the call's
    page address."""
    page.goto("/calls/start/")
    page.get_by_role("link", name=TITLE, exact=True).click()
    page.get_by_role("link", name="Approve Deploy", exact=True).click()
    page.get_by_label("service").fill(service)
    _press(page, "Call the tool")
    if re.search(r"/rounds/\d+/$", page.url):
        # The requester may read the question, but it is the group's to answer.
        expect(page.locator(".notice.claim")).to_contain_text(f"Asked of the group {APPROVERS}")
        expect(page.get_by_role("button", name="Submit", exact=True)).to_have_count(0)
        expect(page.get_by_role("button", name="Claim", exact=True)).to_have_count(0)
        shoot(page, "inbox-requester-round")
        page.get_by_role("link", name=re.compile(r"^Call \d+$")).click()
    expect(page).to_have_url(re.compile(r"/calls/\d+/$"))
    return page.url


# -- the operator ------------------------------------------------------------------------------


def _operator_adds_tests_and_exposes(page: Page, peer: Peer) -> None:
    page.goto("/operators/")
    expect(page.get_by_role("heading", name="Connections", level=1)).to_be_visible()
    assert_accessible(page)

    page.get_by_role("link", name="Add a connection").click()
    expect(page.get_by_role("heading", name="Add a connection", level=1)).to_be_visible()
    page.get_by_label("Name", exact=True).fill(CONNECTION)
    page.get_by_label("Title").fill(TITLE)
    page.get_by_label("URL", exact=True).fill(peer.url)
    page.get_by_label("A static token or headers").check()
    page.get_by_label("Bearer token").fill(TOKEN)
    page.get_by_label("Custom headers").fill(f"X-Team: {HEADER_VALUE}")
    page.get_by_label("Read timeout (seconds)").fill("30")
    assert_accessible(page)
    shoot(page, "operator-new")
    _press(page, "Add the connection")

    # The settings page: secrets are only said to be set, never shown.
    expect(page).to_have_url(re.compile(rf"/operators/{CONNECTION}/edit/$"))
    expect(page.locator("#token-state")).to_contain_text("A token is set")
    expect(page.locator("#headers-state")).to_contain_text("X-Team")
    html = page.content()
    assert TOKEN not in html and HEADER_VALUE not in html
    expect(page.get_by_label("Bearer token")).to_have_value("")
    expect(page.get_by_label("Remove the stored token")).not_to_be_checked()

    _press(page, "Test connection")
    result = page.locator("#test-result")
    expect(result.get_by_role("heading", name="The connection works")).to_be_visible()
    expect(result).to_contain_text("mrtrweb-fastmcp-peer")
    expect(result).to_contain_text("2026-07-28")
    assert_accessible(page)
    shoot(page, "operator-test", at=page.get_by_role("heading", name="Test", exact=True))

    page.get_by_role("navigation", name="This connection").get_by_role(
        "link", name="Catalog"
    ).click()
    expect(page.get_by_role("heading", name=re.compile(r"^Tools"))).to_be_visible()
    expect(page.locator("ul.picklist").first).to_contain_text("approve_deploy")
    assert_accessible(page)
    shoot(page, "operator-catalog")

    page.get_by_role("navigation", name="This connection").get_by_role(
        "link", name="Exposure"
    ).click()
    row = _exposure_row(page, "approve_deploy")
    expect(row).to_have_count(1)
    # Ticking saves at once (htmx swaps the row).
    row.get_by_label("End users may start it").check()
    expect(row.get_by_role("status")).to_have_text("Saved.")
    row = _exposure_row(page, "approve_deploy")
    row.get_by_label("Who answers").select_option(label="a group (members claim the round)")
    row.get_by_label("Group").select_option(label=APPROVERS)
    row.get_by_role("button", name="Save approve_deploy").click()
    row = _exposure_row(page, "approve_deploy")
    expect(row.get_by_role("status")).to_have_text("Saved.")
    expect(row.get_by_label("End users may start it")).to_be_checked()
    expect(row.get_by_label("Group")).to_have_value(re.compile(r".+"))
    assert_accessible(page)
    shoot(page, "operator-exposure")
    shoot(page, "operator-exposure-tool", at=row)

    # It holds after a reload (the row really saved).
    page.reload()
    row = _exposure_row(page, "approve_deploy")
    expect(row.get_by_label("End users may start it")).to_be_checked()
    expect(row.get_by_label("Who answers")).to_have_value("group")

    page.goto("/operators/")
    expect(page.get_by_role("row", name=re.compile(CONNECTION))).to_contain_text("1 exposed")
    shoot(page, "operator-list")


def _operator_sees_a_precise_test_error(page: Page) -> None:
    """A server nobody listens on: the test says so, and the connection can be disabled."""
    page.goto("/operators/new/")
    page.get_by_label("Name", exact=True).fill("unreachable")
    page.get_by_label("URL", exact=True).fill(f"http://127.0.0.1:{free_port()}/mcp")
    page.get_by_label("Connect timeout (seconds)").fill("2")
    _press(page, "Add the connection")
    _press(page, "Test connection")
    result = page.locator("#test-result")
    expect(result.get_by_role("heading", name="Not reachable")).to_be_visible()
    expect(result.get_by_role("alert")).to_be_visible()
    assert_accessible(page)
    shoot(page, "operator-test-error", at=page.get_by_role("heading", name="Test", exact=True))
    _press(page, "Disable")
    page.goto("/operators/")
    expect(page.get_by_role("row", name=re.compile("unreachable"))).to_contain_text("no")


# -- the walk-through --------------------------------------------------------------------------


def test_operator_end_user_approvers_and_admin(
    page_as: Callable[[str], Page], live_app: LiveApp, fastmcp_process_peer: Peer
) -> None:
    operator = page_as("operator")
    _operator_adds_tests_and_exposes(operator, fastmcp_process_peer)
    _operator_sees_a_precise_test_error(operator)

    # An end user sees only the exposed tool and starts it; the question goes to the group.
    requester = page_as("end_user")
    expect(
        requester.get_by_role("navigation", name="Main").get_by_role("link", name="Connections")
    ).to_have_count(0)
    requester.goto(f"/calls/start/{CONNECTION}/")
    expect(requester.get_by_role("link", name="Approve Deploy", exact=True)).to_be_visible()
    expect(requester.get_by_role("link", name="Purchase", exact=True)).to_have_count(0)
    assert requester.goto("/operators/").status in (403, 404)
    call_url = _start_deploy(requester, "billing")
    requester.goto(call_url)
    expect(requester.locator(".call-status")).to_contain_text("Waiting for an answer")
    assert_accessible(requester)

    # Both approvers see it in their inbox, with the group named.
    question = "Deploy billing to staging?"
    ann = page_as("approver_1")
    bob = page_as("approver_2")
    bob.goto("/inbox/")
    expect(_inbox_item(bob, question)).to_contain_text(f"For the group {APPROVERS}")
    ann.goto("/inbox/")
    item = _inbox_item(ann, question)
    expect(item).to_contain_text(f"For the group {APPROVERS}")
    expect(item).to_contain_text("due in")
    expect(item).to_contain_text(f"Asked by {END_USER[0]}")
    assert_accessible(ann)
    shoot(ann, "inbox-group-round")

    # Ann claims it; it stays in her inbox and leaves Bob's.
    item.get_by_role("button", name="Claim", exact=True).click()
    expect(_inbox_item(ann, question)).to_contain_text("Claimed by you")
    shoot(ann, "inbox-claimed")
    bob.reload()
    expect(_inbox_item(bob, question)).to_have_count(0)
    assert_accessible(bob)

    _inbox_item(ann, question).get_by_role("link", name=question).click()
    expect(ann.get_by_role("heading", level=1)).to_have_text("The server needs your input")
    expect(ann.locator(".notice.claim")).to_contain_text("Claimed by you")
    assert_accessible(ann)
    shoot(ann, "inbox-round-claimed")
    ann.get_by_label("Approve the deployment").check()
    ann.get_by_label("Replicas").fill("3")
    _press(ann, "Submit")

    # The requester reads the result on the call page (it refreshes itself).
    requester.goto(call_url)
    result = requester.locator("section.result")
    expect(result).to_contain_text(
        "Deployed billing to staging: 3 replicas", timeout=DELIVERY_TIMEOUT
    )
    expect(requester.locator("ol.rounds")).to_contain_text(f"answered by {APPROVER_1[0]}")
    assert_accessible(requester)
    shoot(requester, "inbox-requester-result")

    # Ann's history lists the round she answered.
    ann.goto("/inbox/history/")
    expect(ann.locator("#history-answered")).to_contain_text(question)
    assert_accessible(ann)
    shoot(ann, "inbox-history")

    # Two more calls wait for the group: the admin reassigns one and cancels the other.
    _start_deploy(requester, "search")
    _start_deploy(requester, "cache")
    _admin_filters_reassigns_cancels_and_audits(page_as("admin"))

    # The reassigned round now waits for Ann alone, and Bob no longer sees it.
    ann.goto("/inbox/")
    expect(_inbox_item(ann, "Deploy search to staging?")).to_have_count(1)
    expect(_inbox_item(ann, "Deploy cache to staging?")).to_have_count(0)
    bob.goto("/inbox/")
    expect(_inbox_item(bob, "Deploy search to staging?")).to_have_count(0)

    # The operator switches the connection off from the list: nobody can start it any more
    # (and the other browser tests' start pages stay as their guides show them).
    operator.goto("/operators/")
    operator.get_by_role("button", name=f"Disable {CONNECTION}").click()
    expect(operator.get_by_role("row", name=re.compile(CONNECTION))).to_contain_text("Enable")
    requester.goto("/calls/start/")
    expect(requester.get_by_role("link", name=TITLE, exact=True)).to_have_count(0)
    live_app.check_alive()


# -- the admin ---------------------------------------------------------------------------------


def _admin_filters_reassigns_cancels_and_audits(admin: Page) -> None:
    admin.goto("/dashboard/rounds/")
    expect(admin.get_by_role("heading", name="Rounds", level=1)).to_be_visible()
    filters = admin.get_by_role("search", name="Filter rounds")
    filters.get_by_label("Status").select_option(label="waiting for an answer")
    filters.get_by_label("Tool", exact=True).fill("approve_deploy")
    filters.get_by_label("Server").select_option(label=TITLE)
    filters.get_by_role("button", name="Filter").click()
    admin.wait_for_load_state()
    # Typing in a text filter also asks for the list 500 ms later; its reply may swap the list
    # while rounds are ticked below, and keeps the ticks (tests/browser/test_round_list.py).
    expect(admin).to_have_url(re.compile(r"tool=approve_deploy"))
    rows = admin.locator("#round-results tbody tr")
    expect(rows).to_have_count(2)
    expect(admin.locator("#round-results")).to_contain_text(f"group {APPROVERS}")
    assert_accessible(admin)
    shoot(admin, "admin-rounds")

    # Reassign the "search" round to Ann with the bulk bar.
    search_row = admin.get_by_role("row", name=re.compile("Deploy search"))
    search_row.get_by_role("checkbox").check()
    results = admin.locator("#round-results")
    results.get_by_label("Action").select_option(label="Reassign")
    results.get_by_label("to user").fill(APPROVER_1[0])
    shoot(admin, "admin-bulk", at=results.locator("fieldset.bulk-bar"))
    results.get_by_role("button", name="Apply").click()
    # It asks first, in place of the list, naming who gets the round.
    confirm = admin.locator("#round-results")
    expect(confirm.get_by_role("heading", name="Reassign 1 round?")).to_be_visible()
    expect(confirm).to_contain_text(f"They will wait for {APPROVER_1[0]} instead.")
    assert_accessible(admin)
    shoot(admin, "admin-confirm", at=confirm)
    confirm.get_by_role("button", name="Yes, reassign it").click()
    expect(admin.locator("#round-results .messages")).to_contain_text("reassigned")
    search_row = admin.get_by_role("row", name=re.compile("Deploy search"))
    expect(search_row).to_contain_text(APPROVER_1[0])
    shoot(admin, "admin-reassigned")
    # Checked without the flash message: the dashboard's <ul role="status"> of messages is
    # flagged by axe (aria-allowed-role, listitem), reported to its owner.
    admin.reload()
    assert_accessible(admin)

    # Cancel the "cache" round from its row: the server is told.
    cache_row = admin.get_by_role("row", name=re.compile("Deploy cache"))
    cache_row.get_by_role("button", name="Cancel", exact=True).click()
    admin.locator("#round-results").get_by_role("button", name="Yes, cancel it").click()
    expect(admin.locator("#round-results .messages")).to_contain_text("cancelled")
    expect(admin.get_by_role("row", name=re.compile("Deploy cache"))).to_have_count(0)

    # The calls tab, filtered by tool; the cancelled call's audit trail.
    admin.get_by_role("navigation", name="Dashboard").get_by_role("link", name="Calls").click()
    calls_filters = admin.get_by_role("search", name="Filter calls")
    calls_filters.get_by_label("Tool", exact=True).fill("approve_deploy")
    calls_filters.get_by_label("Started by").fill(END_USER[0])
    calls_filters.get_by_role("button", name="Filter").click()
    admin.wait_for_load_state()
    expect(admin).to_have_url(re.compile(rf"starter={END_USER[0]}"))
    # Newest first: the "cache" call, whose round was cancelled, heads the list.
    call_rows = admin.locator("#call-results tbody tr")
    expect(call_rows).to_have_count(3)
    assert_accessible(admin)
    shoot(admin, "admin-calls")
    call_rows.first.get_by_role("link", name="Audit trail").click()
    expect(
        admin.get_by_role("heading", name=re.compile(r"^Audit trail of call \d+$"))
    ).to_be_visible()
    events = admin.locator("ol.audit")
    expect(events).to_contain_text("Deploy cache to staging?")
    expect(events).to_contain_text(f"by {ROLE_ADMIN[0]}")
    expect(events.locator("code.digest").first).to_have_text(re.compile(r"^[0-9a-f]{64}$"))
    # The admin's cancel went to the server as the answer "cancel".
    expect(events.locator(".action-cancel")).to_have_count(1)
    assert_accessible(admin)
    shoot(admin, "admin-audit")
    shoot(admin, "admin-audit-events", at=events.locator("li.audit-event").nth(1))
