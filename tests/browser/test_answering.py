"""The person answering, in Chromium: times in the browser's own zone, found by our
own script (no inline script, under the CSP), and a claim race lost by one of two approvers.

The rounds come from the real fastmcp peer through a connection routed to the group
"Approvers"; the connection is switched off afterwards so other tests' start pages stay as
their guides show them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

import pytest

from tests.peers.fixtures import Peer

from .conftest import APPROVERS, LiveApp, _new_page, assert_accessible, expect, sign_in

if TYPE_CHECKING:
    from playwright.sync_api import Page

pytestmark = pytest.mark.browser

CONNECTION = "approvals"
TITLE = "Approvals"
ZONE = "Asia/Tokyo"


@pytest.fixture(scope="module")
def group_connection(
    live_app: LiveApp, fastmcp_process_peer: Peer, role_people: dict[str, tuple[str, str]]
) -> Iterator[str]:
    live_app.manage("mcp_server", "add", "--name", CONNECTION, "--url", fastmcp_process_peer.url)
    live_app.shell(
        f"""
from django.contrib.auth.models import Group
from mrtrweb.servers.models import Connection, Routing
conn = Connection.objects.get(name={CONNECTION!r})
conn.title = {TITLE!r}
conn.routing = Routing.GROUP
conn.route_group = Group.objects.get(name={APPROVERS!r})
conn.save()
"""
    )
    try:
        yield CONNECTION
    finally:
        live_app.shell(
            f"from mrtrweb.servers.models import Connection\n"
            f"Connection.objects.filter(name={CONNECTION!r}).update(enabled=False)"
        )


def _start_deploy(page: Page, service: str) -> str:
    """As the operator: start approve_deploy on the group's connection; the round's address."""
    page.goto(f"/calls/start/{CONNECTION}/?tool=approve_deploy")
    page.get_by_label("service").fill(service)
    page.get_by_role("button", name="Call the tool", exact=True).click()
    page.wait_for_load_state()
    expect(page).to_have_url(re.compile(r"/rounds/\d+/$"))
    return page.url


def test_times_are_shown_in_the_browsers_own_zone(
    browser: Any,
    live_app: LiveApp,
    role_people: dict[str, tuple[str, str]],
    group_connection: str,
) -> None:
    page = _new_page(browser, live_app, timezone_id=ZONE)
    try:
        # The sign-in page's script already told the server the zone (a cookie).
        sign_in(page, *role_people["operator"])
        cookies = {c["name"]: c["value"] for c in page.context.cookies()}
        assert cookies.get("mrtrweb_tz") == ZONE
        _start_deploy(page, "tz")
        # The requester's read-only view shows the deadline like everyone's.
        deadline = page.locator("p.deadline time")
        expect(deadline).to_have_count(1)
        at = datetime.fromisoformat(deadline.get_attribute("datetime") or "")
        local = at.astimezone(ZoneInfo(ZONE))
        expect(deadline).to_have_text(
            re.compile(rf"^in \d+ minutes — {local.day} {local:%b}, {local:%H:%M}$")
        )
        expect(deadline).to_have_attribute("title", re.compile(rf"\({ZONE}\)$"))
        expect(page.locator("p.deadline")).not_to_contain_text("UTC")
        assert_accessible(page)

        # The account page says where the zone came from, and can change it.
        page.goto("/account/")
        expect(page.locator("main")).to_contain_text(f"Times are shown in {ZONE} (your browser's)")
        page.get_by_role("combobox", name="Time zone").select_option("Europe/Oslo")
        page.get_by_role("button", name="Save time zone").click()
        expect(page.locator("main")).to_contain_text("Times are shown in Europe/Oslo (chosen here)")
        assert_accessible(page)
    finally:
        page.context.close()


def test_two_approvers_race_for_a_round_and_the_one_who_loses_keeps_what_they_typed(
    page_as: Callable[[str], Page],
    role_people: dict[str, tuple[str, str]],
    group_connection: str,
) -> None:
    round_url = _start_deploy(page_as("operator"), "race")
    ann, bob = page_as("approver_1"), page_as("approver_2")
    ann.goto(round_url)
    bob.goto(round_url)
    expect(bob.locator(".asked-context")).to_contain_text(
        f"Asked by {role_people['operator'][0]} just now"
    )
    bob.get_by_label("Replicas").fill("7")
    bob.get_by_label("Reason").fill("before the freeze")
    bob.get_by_label("This weekend").check()

    ann.get_by_role("button", name="Claim", exact=True).click()
    ann.wait_for_load_state()
    expect(ann.locator(".notice.claim")).to_contain_text("Claimed by you")

    bob.get_by_role("button", name="Submit", exact=True).click()
    bob.wait_for_load_state()
    ann_name = role_people["approver_1"][0]
    expect(bob.get_by_role("heading", level=1)).to_have_text(f"{ann_name} took this round")
    expect(bob.get_by_role("alert")).to_contain_text(f"{ann_name} took it")
    expect(bob.get_by_role("alert")).to_contain_text("Your answers were not sent")
    typed = bob.locator("section.taken-typed")
    expect(typed).to_contain_text("Replicas")
    expect(typed).to_contain_text("7")
    expect(typed).to_contain_text("This weekend")
    expect(typed).to_contain_text("before the freeze")
    expect(bob.get_by_role("button", name="Submit")).to_have_count(0)
    expect(bob.get_by_role("link", name="Back to your inbox")).to_be_visible()
    assert_accessible(bob)
