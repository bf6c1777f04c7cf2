"""Every role's pages under the Content-Security-Policy, in Chromium: nothing refused.

Every browser test's context is watched (conftest.CspWatch: the page's securitypolicyviolation
events and Chromium's console) and fails on any refusal; these tests walk the pages of each
role on purpose, say after each page that it was clean, and prove that what needs script
(live updates, the dashboard's filters and tick-all box, Django admin's widgets) still works
under the policy. The lockout page is reached from an address of its own, which uvicorn takes
from X-Forwarded-For because the browser connects from 127.0.0.1, a proxy the harness trusts
(MRTRWEB_TRUSTED_PROXIES in conftest.live_app).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from tests.peers.fixtures import Peer, start_peer

from .conftest import (
    ADMIN,
    PERSON,
    CspWatch,
    LiveApp,
    _close,
    _new_page,
    assert_accessible,
    assert_no_csp_violations,
    expect,
    sign_in,
)
from .test_live import live_socket_open, mark_document, same_document, start_call

if TYPE_CHECKING:
    from playwright.sync_api import Page

pytestmark = pytest.mark.browser

LIVE_TIMEOUT = 20_000
SERVER = "csp"


@pytest.fixture(scope="module")
def csp_connection(live_app: LiveApp) -> Iterator[str]:
    """The progress peer (all the fastmcp peer's tools, and one that reports progress)."""
    peer: Peer = start_peer("tests.live.progress_peer")
    try:
        live_app.manage("mcp_server", "add", "--name", SERVER, "--url", peer.url)
        yield SERVER
    finally:
        peer.stop()


def visit(page: Page, path: str, heading: str | re.Pattern[str]) -> None:
    page.goto(path)
    expect(page.get_by_role("heading", level=1)).to_have_text(heading)
    assert_no_csp_violations(page)


def test_the_watch_sees_what_the_policy_refuses(page: Page) -> None:
    # The harness proves something only if a refusal would be seen.
    page.goto("/")
    page.evaluate(
        """() => {
        const script = document.createElement("script");
        script.textContent = "window.ran = true";
        document.body.append(script);
        document.body.insertAdjacentHTML("beforeend", '<p style="color: red">styled</p>');
    }"""
    )
    page.wait_for_timeout(200)
    watch = CspWatch.of(page.context)
    seen = "\n".join(watch.violations)
    assert "script-src" in seen and "style-src" in seen, seen
    assert page.evaluate("window.ran === undefined")
    watch.violations.clear()


def test_signed_out_pages(page: Page) -> None:
    visit(page, "/", "mrtrweb")
    visit(page, "/accounts/login/", "Sign in")
    visit(page, "/api/v1/docs/", re.compile(r"^mrtrweb"))
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill(PERSON[0])
    page.get_by_label("Password").fill("not the password")
    page.get_by_role("button", name="Sign in", exact=True).click()
    expect(page.get_by_text("do not match an account here")).to_be_visible()
    assert_no_csp_violations(page)


def test_the_lockout_page_from_an_address_of_its_own(browser: Any, live_app: LiveApp) -> None:
    page = _new_page(browser, live_app, extra_http_headers={"X-Forwarded-For": "192.0.2.44"})
    try:
        statuses: list[int] = []
        page.on("response", lambda r: r.request.method == "POST" and statuses.append(r.status))
        page.goto("/accounts/login/")
        for _ in range(5):
            page.get_by_label("Username").fill("nobody-by-this-name")
            page.get_by_label("Password").fill("guess")
            page.get_by_role("button", name="Sign in", exact=True).click()
            page.wait_for_load_state()
            if statuses[-1:] == [429]:
                break
            page.goto("/accounts/login/")
        assert statuses == [200, 200, 200, 200, 429], statuses
        expect(page.get_by_role("heading", level=1)).to_have_text("Signing in is paused")
        expect(page.get_by_text("You can try again after")).to_be_visible()
        assert_accessible(page)
        assert_no_csp_violations(page)

        # The address is paused for everyone (the right password included) ...
        page.goto("/accounts/login/")
        page.get_by_label("Username").fill(PERSON[0])
        page.get_by_label("Password").fill(PERSON[1])
        page.get_by_role("button", name="Sign in", exact=True).click()
        expect(page.get_by_role("heading", level=1)).to_have_text("Signing in is paused")
        assert_no_csp_violations(page)
    finally:
        _close(page)

    # ... but not the proxy's own address, nor the others behind it.
    other = _new_page(browser, live_app)
    try:
        sign_in(other, *PERSON)
    finally:
        _close(other)


def test_a_person_walks_home_inbox_calls_tokens_and_the_reference(signed_in_page: Page) -> None:
    page = signed_in_page
    visit(page, "/", "mrtrweb")
    visit(page, "/inbox/", re.compile("Inbox"))
    visit(page, "/inbox/history/", re.compile("Inbox"))
    visit(page, "/calls/start/", "Start a call")
    visit(page, "/calls/", re.compile("calls", re.IGNORECASE))
    visit(page, "/account/tokens/", "API tokens")
    page.get_by_label("Name").fill("csp walk")
    page.get_by_role("button", name="Make the token").click()
    expect(page.locator("#token-text")).to_have_text(re.compile(r"^mrtr_"))
    assert_no_csp_violations(page)
    visit(page, "/api/v1/docs/", re.compile(r"^mrtrweb"))


def test_an_end_user_walks_their_pages(page_as: Any) -> None:
    page = page_as("end_user")
    visit(page, "/", "mrtrweb")
    visit(page, "/inbox/", "Inbox")
    visit(page, "/calls/start/", "Start a call")
    visit(page, "/calls/", "My calls")
    visit(page, "/account/tokens/", "API tokens")


def test_a_round_form_with_every_field_kind(signed_in_page: Page, csp_connection: str) -> None:
    page = signed_in_page
    page.goto(f"/calls/start/{csp_connection}/")
    assert_no_csp_violations(page)
    page.get_by_role("link", name="All Field Kinds", exact=True).click()
    assert_no_csp_violations(page)
    page.get_by_role("button", name="Call the tool").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("The server needs your input")
    for kind in ("Free text", "email", "birthday", "meeting", "count", "agree", "cheese"):
        expect(page.get_by_label(kind).first).to_be_visible()
    assert_no_csp_violations(page)


def test_a_call_page_follows_progress_and_the_result_live(
    signed_in_page: Page, live_app: LiveApp, csp_connection: str
) -> None:
    call = start_call(live_app, csp_connection, "confirm_then_work", {"steps": 3, "delay": 2.0})
    page = signed_in_page
    page.goto(call["round"]["url"])
    expect(page.get_by_role("heading", level=1)).to_have_text("The server needs your input")
    live_socket_open(page, "#live-call-socket")
    page.get_by_label("Go").check()
    page.get_by_role("button", name="Submit", exact=True).click()

    # The answer page waits 2 s, less than the server's 6 s of work: the call page then
    # follows the work over its socket, with no reload.
    expect(page).to_have_url(re.compile(rf"/calls/{call['id']}/$"), timeout=LIVE_TIMEOUT)
    live_socket_open(page, "#live-call-socket")
    mark_document(page)
    expect(page.get_by_label("Progress")).to_be_visible(timeout=LIVE_TIMEOUT)
    expect(page.locator("section.result")).to_contain_text("worked 3 steps", timeout=LIVE_TIMEOUT)
    assert same_document(page), "the page was reloaded"
    assert_no_csp_violations(page)


def test_an_admin_uses_the_dashboard(page_as: Any, csp_connection: str, live_app: LiveApp) -> None:
    for service in ("one", "two"):
        start_call(live_app, csp_connection, "approve_deploy", {"service": service})
    page = page_as("admin")
    visit(page, "/dashboard/rounds/", "Rounds")

    # The tick-all box (static/mrtrweb/dashboard.js) ticks every round of the page.
    rounds = page.locator("#round-results input[name=rounds]")
    expect(rounds.first).to_be_visible()
    page.get_by_label("Tick every round on this page").check()
    assert rounds.count() >= 2
    for index in range(rounds.count()):
        expect(rounds.nth(index)).to_be_checked()
    # A select filters at once (htmx, without eval).
    filters = page.get_by_role("search", name="Filter rounds")
    filters.get_by_label("Status").select_option(label="waiting for an answer")
    expect(page).to_have_url(re.compile(r"status="))
    assert_no_csp_violations(page)

    visit(page, "/dashboard/calls/", "Calls")
    page.locator("#call-results").get_by_role("link", name="Audit trail").first.click()
    expect(page.get_by_role("heading", level=1)).to_have_text(re.compile(r"^Audit trail"))
    assert_no_csp_violations(page)


def test_an_operator_uses_the_console(page_as: Any, csp_connection: str) -> None:
    page = page_as("operator")
    visit(page, "/operators/", re.compile("Connections"))
    visit(page, "/operators/new/", re.compile("connection", re.IGNORECASE))
    visit(page, f"/operators/{csp_connection}/catalog/", re.compile(csp_connection))
    visit(page, f"/operators/{csp_connection}/exposure/", re.compile(csp_connection))
    visit(page, f"/operators/{csp_connection}/edit/", re.compile(csp_connection))
    # The test's result replaces #test-result in place (htmx).
    page.get_by_role("button", name="Test connection").click()
    expect(page.locator("#test-result")).not_to_be_empty(timeout=LIVE_TIMEOUT)
    expect(page).to_have_url(re.compile(r"/edit/$"))
    assert_no_csp_violations(page)


def test_the_superuser_uses_django_admin(page: Page) -> None:
    sign_in(page, *ADMIN, next_path="/admin/")
    expect(page.get_by_role("heading", name="Site administration")).to_be_visible()
    assert_no_csp_violations(page)

    page.goto("/admin/auth/user/")
    page.get_by_role("link", name=PERSON[0], exact=True).click()
    expect(page.get_by_role("heading", name="Change user")).to_be_visible()
    # The groups widget is built by admin's JavaScript (SelectFilter2.js).
    expect(page.locator(".selector-available").first).to_be_visible()
    assert_no_csp_violations(page)

    for path in ("/admin/auth/group/add/", "/admin/calls/call/", "/admin/axes/accessattempt/"):
        page.goto(path)
        expect(page.locator("#content")).to_be_visible()
        assert_no_csp_violations(page)
