"""The site's own pages around the work, in Chromium: error pages, sign-in and password
reset, the dashboard's confirmation step (with and without JavaScript) and the token's Copy
button; every page checked by axe and under the CSP (the context's watch)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.conftest import (
    ADMIN,
    PERSON,
    LiveApp,
    _close,
    _new_page,
    assert_accessible,
    shoot,
    sign_in,
)
from tests.support.terminal_calls import park_deploy

pytest.importorskip("playwright")
from playwright.sync_api import expect


@pytest.fixture
def no_script_page(browser: Any, live_app: LiveApp) -> Iterator[Any]:
    fresh = _new_page(browser, live_app, java_script_enabled=False)
    try:
        yield fresh
    finally:
        _close(fresh)


def test_sign_in_reset_and_error_pages(page: Any) -> None:
    page.goto("/accounts/login/")
    expect(page.get_by_role("heading", name="Sign in", level=1)).to_be_visible()
    assert_accessible(page)
    page.get_by_label("Username").fill(PERSON[0])
    page.get_by_label("Password").fill("not the password")
    page.get_by_role("button", name="Sign in", exact=True).click()
    expect(page.get_by_role("alert")).to_contain_text("do not match an account here")
    assert_accessible(page)
    shoot(page, "sign-in-wrong-password")

    page.get_by_role("link", name="Forgot your password?").click()
    expect(page.get_by_role("heading", name="Reset your password")).to_be_visible()
    assert_accessible(page)
    page.get_by_label("Email").fill("nobody@example.org")
    page.get_by_role("button", name="Send the link").click()
    expect(page.get_by_role("heading", name="Check your email")).to_be_visible()
    assert_accessible(page)

    page.goto("/no/such/page/")
    expect(page.get_by_role("heading", name="This page is not here")).to_be_visible()
    expect(page.get_by_role("navigation", name="Main")).to_be_visible()
    assert_accessible(page)
    page.get_by_role("link", name="Go to the home page").click()
    expect(page).to_have_url(re.compile(r"/$"))

    icon = page.request.get("/favicon.ico")
    assert icon.ok and icon.headers["content-type"].startswith("image/svg+xml")


def test_a_403_says_why_and_leads_back(signed_in_page: Any) -> None:
    page = signed_in_page  # an operator, not an admin
    page.goto("/calls/")
    # As a link from the calls page would (a bookmark or a typed address sends no Referer).
    page.goto("/dashboard/rounds/", referer=page.url)
    expect(page.get_by_role("heading", name="You may not open this page")).to_be_visible()
    expect(page.get_by_text("The dashboard is for admins.")).to_be_visible()
    assert_accessible(page)
    shoot(page, "error-403")
    page.get_by_role("link", name="Back to the page you came from").click()
    expect(page).to_have_url(re.compile(r"/calls/$"))


@pytest.mark.parametrize("script", [True, False], ids=["htmx", "no-javascript"])
def test_the_dashboard_asks_before_cancelling(
    browser: Any, live_app: LiveApp, peer_connection: str, script: bool
) -> None:
    round_id = park_deploy(live_app, peer_connection, f"confirm-{int(script)}", user=PERSON[0])
    page = _new_page(browser, live_app, java_script_enabled=script)
    try:
        sign_in(page, *ADMIN, next_path="/dashboard/rounds/")
        page.goto("/dashboard/rounds/")
        row = page.locator(f"#round-{round_id}")
        row.get_by_role("button", name="Cancel", exact=True).click()

        confirm = page.locator("#round-results")
        expect(confirm.get_by_role("heading", name="Cancel 1 round?")).to_be_visible()
        expect(confirm).to_contain_text(f"Round #{round_id}")
        if script:  # axe runs as a script: the page without JavaScript is the same HTML
            assert_accessible(page)
            shoot(page, "admin-confirm-cancel", at=confirm)
        # With htmx the question took the list's place; without, it is a page of its own.
        assert page.url.endswith("/dashboard/rounds/" if script else "/dashboard/rounds/bulk/")
        confirm.get_by_role("button", name="Yes, cancel it").click()
        expect(page.locator(".messages")).to_contain_text("1 cancelled")
        expect(page.locator(f"#round-{round_id}")).to_have_count(0)
    finally:
        _close(page)


def test_no_means_nothing_happens(browser: Any, live_app: LiveApp, peer_connection: str) -> None:
    round_id = park_deploy(live_app, peer_connection, "keep", user=PERSON[0])
    page = _new_page(browser, live_app)
    try:
        sign_in(page, *ADMIN, next_path="/dashboard/rounds/")
        page.goto("/dashboard/rounds/")
        page.locator(f"#round-{round_id}").get_by_role("button", name="Cancel", exact=True).click()
        page.get_by_role("link", name="No, keep it as it is").click()
        expect(page.locator(f"#round-{round_id}")).to_contain_text("waiting for an answer")
    finally:
        _close(page)


def test_a_new_token_has_a_copy_button(signed_in_page: Any) -> None:
    page = signed_in_page
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.goto("/account/tokens/")
    page.get_by_label("Name").fill("copy test")
    page.get_by_role("button", name="Make the token").click()
    token = page.locator("#token-text")
    expect(token).to_have_text(re.compile(r"^mrtr_"))
    box = page.locator(".secret-box").first
    box.get_by_role("button", name="Copy", exact=True).click()
    expect(box.get_by_role("status")).to_have_text("Copied.")
    assert page.evaluate("navigator.clipboard.readText()") == token.inner_text().strip()
    assert_accessible(page)
    shoot(page, "token-copy", at=page.locator("#new-token"))


def test_without_javascript_the_token_is_text_to_select(
    no_script_page: Any, live_app: LiveApp
) -> None:
    page = no_script_page
    sign_in(page, *PERSON, next_path="/account/tokens/")
    page.goto("/account/tokens/")
    page.get_by_label("Name").fill("no script")
    page.get_by_role("button", name="Make the token").click()
    expect(page.locator("#token-text")).to_have_text(re.compile(r"^mrtr_"))
    # Hidden: it needs the script.
    expect(page.get_by_role("button", name="Copy", exact=True)).to_have_count(0)


def test_people_and_groups_pages(browser: Any, live_app: LiveApp) -> None:
    page = _new_page(browser, live_app)
    try:
        sign_in(page, *ADMIN, next_path="/dashboard/people/")
        page.goto("/dashboard/people/")
        page.get_by_role("link", name="Invite someone").click()
        page.get_by_label("Username").fill("invited-in-browser")
        page.get_by_label("Email").fill("invited@example.org")
        page.get_by_role("checkbox", name=re.compile(r"Operators")).check()
        assert_accessible(page)
        shoot(page, "admin-invite")
        page.get_by_role("button", name="Invite").click()
        expect(page.get_by_role("heading", name="invited-in-browser")).to_be_visible()
        expect(page.locator(".messages")).to_contain_text("is invited")
        expect(page.get_by_text("Invited: no password chosen yet")).to_be_visible()
        assert_accessible(page)

        page.get_by_role("navigation", name="Dashboard").get_by_role("link", name="Groups").click()
        page.get_by_label("Name of the new group").fill("Browser testers")
        page.get_by_role("button", name="Make the group").click()
        page.get_by_label("Add a member (username)").fill("invited-in-browser")
        page.get_by_role("button", name="Add", exact=True).click()
        expect(page.get_by_role("row", name=re.compile("invited-in-browser"))).to_be_visible()
        assert_accessible(page)
        shoot(page, "admin-group")

        page.get_by_role("navigation", name="Dashboard").get_by_role("link", name="People").click()
        expect(page.get_by_role("row", name=re.compile("invited-in-browser"))).to_contain_text(
            "Browser testers"
        )
        assert_accessible(page)
        shoot(page, "admin-people")
    finally:
        _close(page)
