"""The admins' round list keeps what the admin did while a new list was on its way.

The text filters ask for the list 500 ms after the last key (``hx-trigger="input changed
delay:500ms"``), and a slow reply comes later still: by then the admin may have ticked rounds
and chosen an action in the list they had. The reply must not wipe that (static/mrtrweb/
dashboard.js). Here the reply is held back by the browser (Playwright's routing) until the
admin has ticked, so the race is certain rather than a matter of timing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.conftest import ADMIN, PERSON, LiveApp, _close, _new_page, sign_in
from tests.support.terminal_calls import park_deploy

pytest.importorskip("playwright")
from playwright.sync_api import expect

LIST_REQUEST = re.compile(r"/dashboard/rounds/\?")


class HeldReplies:
    """Holds the list requests htmx makes while ``holding``, until :meth:`release`."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.holding = False
        self.held: list[Any] = []
        page.route(LIST_REQUEST, self._route)

    def _route(self, route: Any) -> None:
        if self.holding and route.request.headers.get("hx-request") == "true":
            self.held.append(route)
        else:
            route.continue_()

    def wait_for_one(self) -> None:
        for _ in range(100):  # the filter asks 500 ms after the last key
            if self.held:
                return
            self.page.wait_for_timeout(50)
        raise AssertionError("the text filter never asked for the list")

    def release(self) -> None:
        """Let the held reply through and wait until htmx has swapped it in."""
        self.holding = False
        self.page.locator("#round-results").evaluate("list => list.dataset.before = 'yes'")
        self.held.pop().continue_()
        expect(self.page.locator("#round-results[data-before]")).to_have_count(0)


@pytest.fixture
def admin(browser: Any, live_app: LiveApp) -> Iterator[Any]:
    page = _new_page(browser, live_app)
    try:
        sign_in(page, *ADMIN, next_path="/dashboard/rounds/")
        yield page
    finally:
        _close(page)


def test_a_late_list_keeps_the_ticks_on_the_rounds_it_still_shows(
    admin: Any, live_app: LiveApp, peer_connection: str
) -> None:
    alpha = park_deploy(live_app, peer_connection, "tickrace-alpha", user=PERSON[0])
    beta = park_deploy(live_app, peer_connection, "tickrace-beta", user=PERSON[0])
    admin.goto("/dashboard/rounds/?q=tickrace")
    results = admin.locator("#round-results")
    expect(results.locator("tbody tr")).to_have_count(2)
    filters = admin.get_by_role("search", name="Filter rounds")
    replies = HeldReplies(admin)
    tick_alpha = admin.locator(f"#round-{alpha}").get_by_role("checkbox")
    tick_beta = admin.locator(f"#round-{beta}").get_by_role("checkbox")

    # Typed, and the reply is late: meanwhile the admin ticks a round and sets up the action.
    replies.holding = True
    filters.get_by_label("Search").fill("tickrace-")
    replies.wait_for_one()
    tick_alpha.check()
    results.get_by_label("Action").select_option(label="Reassign")
    results.get_by_label("to user").fill(PERSON[0])
    replies.release()
    expect(admin).to_have_url(re.compile(r"q=tickrace-"))
    expect(results.locator("tbody tr")).to_have_count(2)
    expect(tick_alpha).to_be_checked()
    expect(tick_beta).not_to_be_checked()
    expect(results.get_by_label("Action")).to_have_value("reassign")
    expect(results.get_by_label("to user")).to_have_value(PERSON[0])

    # A reply that no longer lists the ticked round drops its tick: nothing is done to a
    # round the admin cannot see, and the one listed was never ticked.
    replies.holding = True
    filters.get_by_label("Search").fill("tickrace-beta")
    replies.wait_for_one()
    replies.release()
    expect(results.locator("tbody tr")).to_have_count(1)
    expect(tick_alpha).to_have_count(0)
    expect(tick_beta).not_to_be_checked()

    # While the list's place asks "Reassign 1 round?", a list reply does not take it away.
    tick_beta.check()
    results.get_by_role("button", name="Apply").click()
    question = results.get_by_role("heading", name="Reassign 1 round?")
    expect(question).to_be_visible()
    with admin.expect_response(LIST_REQUEST):
        filters.get_by_label("Search").fill("tickrace")
    admin.wait_for_timeout(200)  # htmx swaps (or not) just after the reply
    expect(question).to_be_visible()
    results.get_by_role("link", name="No, keep it as it is").click()
    expect(admin.locator(f"#round-{beta}")).to_contain_text("waiting for an answer")
