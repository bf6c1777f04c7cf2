"""docs/user-guide.md, followed step by step against the demo server that `make run` starts.

These are the walkthroughs the guide describes, on `mrtrweb.demo.server` registered as the
connection `demo` ("Demo server"), as `make run` registers it. With
``MRTRWEB_SCREENSHOTS=docs/images`` they also take the guide's pictures.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from tests.peers.fixtures import Peer, running_peer

from .conftest import LiveApp, assert_accessible, expect, shoot
from .test_rounds import DELIVERY_TIMEOUT, Person

if TYPE_CHECKING:
    from playwright.sync_api import Page

pytestmark = pytest.mark.browser

DEMO = "Demo server"


@pytest.fixture(scope="package")
def demo_server() -> Iterator[Peer]:
    with running_peer("mrtrweb.demo.server") as server:
        yield server


@pytest.fixture(scope="package")
def demo_connection(live_app: LiveApp, demo_server: Peer) -> str:
    live_app.manage(
        "mcp_server", "add", "--name", "demo", "--title", DEMO, "--url", demo_server.url
    )
    return DEMO


@pytest.fixture
def person(signed_in_page: Page, live_app: LiveApp) -> Iterator[Person]:
    someone = Person(signed_in_page, live_app)
    yield someone
    for url, html in someone.pages_seen:
        if "/calls/start/" in url and url.rstrip("/").count("/") > 4:
            continue  # the catalog: the server's own descriptions
        assert "requestState" not in html, f"'requestState' appears in the HTML of {url}"


def structured(page: Any) -> dict[str, Any]:
    return json.loads(page.locator("section.result details.raw-json pre").text_content() or "")


def test_guide_approve_a_deployment(person: Person, demo_connection: str) -> None:
    page = person.page
    person.goto("/calls/start/")
    shoot(page, "start-pick")
    person.click("link", demo_connection, exact=True)
    shoot(page, "start-catalog", at=page.get_by_role("heading", name=re.compile("What .* offers")))
    person.click("link", "Approve a deployment", exact=True)
    page.get_by_label("version").fill("v2.5.0")
    shoot(page, "start-form")
    person.press("Call the tool")

    person.expect_round()
    expect(page.get_by_text("Approve deploying v2.5.0?")).to_be_visible()
    page.get_by_label("api", exact=True).check()
    page.get_by_label("Replicas").fill("4")
    page.get_by_label("Canary traffic (%)").fill("25")
    page.get_by_label("#dev channel").check()
    page.get_by_label("Right now").check()
    page.get_by_label("Reason").fill("Fixes the slow search page")
    page.get_by_label("I approve this deployment").check()
    assert_accessible(page)
    shoot(page, "round-form")
    shoot(page, "round-form-buttons", at=page.get_by_role("group", name="Deployment window"))
    person.press("Submit")

    person.expect_result("Approved: api v2.5.0 goes out Right now with 4 replicas")
    assert structured(page)["notify"] == ["ops", "dev"]
    shoot(page, "call-result")


def test_guide_buy_something_in_two_rounds(person: Person, demo_connection: str) -> None:
    page = person.page
    person.start_tool(demo_connection, "Buy something", {"quantity": "2"})
    person.expect_round()
    expect(page.get_by_text("Where should we ship 2 x Mechanical keyboard?")).to_be_visible()
    page.get_by_label("Full name").fill("Ada Lovelace")
    page.get_by_label("Street address").fill("12 St James's Square, London")
    page.get_by_label("United Kingdom").check()
    # The browser lets this address through; mrtrweb checks it before anything is sent.
    page.get_by_label("Email for tracking").fill("ada@localhost-mail")
    person.press("Submit")

    person.expect_round()
    email = page.get_by_label("Email for tracking")
    expect(email).to_have_attribute("aria-invalid", "true")
    expect(email).to_have_value("ada@localhost-mail")
    expect(page.get_by_label("Full name")).to_have_value("Ada Lovelace")
    shoot(page, "round-invalid", at=page.get_by_label("Street address"))
    email.fill("ada@example.org")
    page.get_by_label("Express delivery").check()
    person.press("Submit")

    # "you land straight on the next question" (the demo server answers at once).
    assert person.answer_next_round(2), f"Submit left the person on {page.url}"
    expect(
        page.get_by_text(re.compile(r"Pay 273\.00 EUR for 2 x Mechanical keyboard"))
    ).to_be_visible()
    page.get_by_label("Mastercard ending 5555").check()
    page.get_by_label("Coupon code").fill("DEMO10")
    page.get_by_label("Confirm payment").check()
    assert_accessible(page)
    shoot(page, "round-second")
    person.press("Submit")

    person.expect_result("245.70 EUR paid with Mastercard ending 5555, express delivery")
    expect(page.locator("ol.rounds > li")).to_have_count(2)
    shoot(page, "call-two-rounds", at=page.get_by_role("heading", name="Rounds"))


def test_guide_verify_identity_through_a_link(person: Person, demo_connection: str) -> None:
    page = person.page
    person.start_tool(demo_connection, "Verify your identity", {})
    person.expect_round()
    expect(page.get_by_role("link", name="Open", exact=True)).to_have_count(0)
    assert_accessible(page)
    shoot(page, "round-url-consent")

    person.click("button", "I agree to open this link")
    open_link = page.get_by_role("link", name="Open", exact=True)
    expect(open_link).to_have_attribute("target", "_blank")
    shoot(page, "round-url-open")
    with page.context.expect_page() as opened:
        open_link.click()
    tab = opened.value
    tab.wait_for_load_state()
    tab.set_viewport_size({"width": 1200, "height": 800})
    shoot(tab, "url-verify-page")
    tab.get_by_role("button", name="I'm verified").click()
    tab.wait_for_load_state()
    tab.close()

    person.press("I've finished")
    person.expect_result("Identity verified: you may now open the payroll report.")
    shoot(page, "call-url-result")


def test_guide_decline(person: Person, demo_connection: str) -> None:
    page = person.page
    person.start_tool(demo_connection, "Approve a deployment", {})
    person.expect_round()
    person.press("Decline")
    person.expect_result("declined")
    expect(page.locator("ol.rounds")).to_contain_text("declined", timeout=DELIVERY_TIMEOUT)
    shoot(page, "call-declined")
