"""The harness itself: the app runs as `make run` runs it, styled, and people can sign in."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.support import second_factor

from .conftest import ADMIN, PERSON, LiveApp, assert_accessible, expect, shoot, sign_in

pytestmark = pytest.mark.browser


def test_home_page_is_styled_and_accessible(page: Any, live_app: LiveApp) -> None:
    stylesheets: list[tuple[str, int]] = []
    page.on(
        "response",
        lambda r: (
            stylesheets.append((r.url, r.status))
            if r.request.resource_type == "stylesheet"
            else None
        ),
    )
    page.goto("/")
    expect(page.get_by_role("heading", name="mrtrweb", level=1)).to_be_visible()
    # The collected, hashed file that WhiteNoise serves with DEBUG off.
    assert stylesheets, "the page loaded no stylesheet"
    assert all(status == 200 for _, status in stylesheets), stylesheets
    assert any("/static/mrtrweb/site." in url for url, _ in stylesheets), stylesheets
    background = page.evaluate("getComputedStyle(document.documentElement).backgroundColor")
    assert background == "rgb(246, 247, 249)", "site.css did not apply"
    assert_accessible(page)
    live_app.check_alive()


def test_a_person_signs_in_and_finds_start_a_call(page: Any) -> None:
    page.goto("/calls/start/")
    # Not signed in: the sign-in page, which leads back afterwards.
    expect(page.get_by_role("heading", name="Sign in", level=1)).to_be_visible()
    assert_accessible(page)
    page.get_by_label("Username").fill(PERSON[0])
    page.get_by_label("Password").fill(PERSON[1])
    shoot(page, "sign-in")
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.wait_for_load_state()
    second_factor.pass_code_page_in_browser(page)  # an operator: two-step sign-in
    expect(page.get_by_role("heading", name="Start a call", level=1)).to_be_visible()
    page.get_by_role("link", name="Home", exact=True).click()
    assert_accessible(page)
    shoot(page, "home")
    page.get_by_role("main").get_by_role("link", name="Start a call").click()
    expect(page.get_by_role("heading", name="Start a call", level=1)).to_be_visible()


def test_wrong_password_stays_on_the_sign_in_page(page: Any) -> None:
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill(PERSON[0])
    page.get_by_label("Password").fill("not the password")
    page.get_by_role("button", name="Sign in", exact=True).click()
    expect(page).to_have_url(re.compile(r"/accounts/login/"))
    expect(page.get_by_text("do not match an account here")).to_be_visible()
    assert_accessible(page)


def test_admin_signs_in_to_the_admin(page: Any) -> None:
    sign_in(page, *ADMIN, next_path="/admin/")
    expect(page.get_by_role("heading", name="Site administration")).to_be_visible()
