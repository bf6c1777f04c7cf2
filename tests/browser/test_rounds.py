"""A person starts calls, answers rounds and reads results, in Chromium, against the real app.

Fields are found by their labels and buttons by their names, as a person (or a screen reader)
finds them. Every page's HTML is kept and checked at the end of each test: the opaque
``requestState`` (its name, and the very token the app sent back to the server) never reaches
the browser. With ``MRTRWEB_SCREENSHOTS=docs/images`` some tests also take pictures for
docs/user-guide.md (the rest come from test_user_guide.py, on the demo server).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from tests.peers.fixtures import Peer

from .conftest import (
    PERSON,
    LiveApp,
    SlowPeer,
    assert_accessible,
    axe_violations,
    expect,
    format_violations,
    shoot,
)

if TYPE_CHECKING:
    from playwright.sync_api import Page

try:
    from playwright.sync_api import Error as PlaywrightError
except ImportError:  # the `browser` fixture fails every test with the reason and the fix
    PlaywrightError = Exception  # type: ignore[assignment,misc]

pytestmark = pytest.mark.browser

# Answers are sent by the web process as it takes them; the answer page waits a moment
# (MRTRWEB_ANSWER_WAIT, 2 s) for the outcome, and past that the call page updates itself.
DELIVERY_TIMEOUT = 20_000
ROUND_URL = re.compile(r"/rounds/\d+/$")
CALL_URL = re.compile(r"/calls/\d+/$")
# Well past the answer page's wait, with room for axe to run on the page meanwhile.
SLOW_SERVER_DELAY = 8.0


class Person:
    """A signed-in person at the browser, keeping the HTML of every page they saw."""

    def __init__(self, page: Page, app: LiveApp) -> None:
        self.page = page
        self.app = app
        self.pages_seen: list[tuple[str, str]] = []
        # The page a click was made on: a form posted there may take a moment to land.
        self.clicked_on = ""

    def saw(self) -> None:
        for attempt in range(3):
            self.page.wait_for_load_state()
            try:
                html = self.page.content()
            except PlaywrightError as exc:
                # A form's answer can land (or the page update itself) while it is read: read
                # the page it became.
                moved = "navigating" in str(exc) or "destroyed" in str(exc)
                if not moved or attempt == 2:
                    raise
                continue
            self.pages_seen.append((self.page.url, html))
            return

    def goto(self, path: str) -> None:
        self.page.goto(path)
        self.saw()

    def click(self, role: str, name: str, **options: Any) -> None:
        self.clicked_on = self.page.url
        self.page.get_by_role(role, name=name, **options).click()
        self.saw()

    def press(self, name: str) -> None:
        self.click("button", name, exact=True)

    def start_tool(self, connection: str, tool: str, arguments: dict[str, str]) -> None:
        """From the start page: pick the server, the tool (by its title), fill the arguments
        (by their labels) and call it."""
        self.goto("/calls/start/")
        self.click("link", connection, exact=True)
        self.click("link", tool, exact=True)
        for label, value in arguments.items():
            self.page.get_by_label(label).fill(value)
        self.press("Call the tool")

    def expect_round(self, index: int | None = None) -> None:
        expect(self.page).to_have_url(ROUND_URL)
        if index is not None:
            expect(self.page).to_have_title(re.compile(rf"^Round {index} of call \d+ "))
        expect(self.page.get_by_role("heading", level=1)).to_have_text(
            "The server needs your input"
        )

    def expect_result(self, text: str) -> None:
        """Wait on the call page (it refreshes itself) until the result shows ``text``."""
        expect(self.page).to_have_url(CALL_URL)
        result = self.page.locator("section.result")
        expect(result).to_contain_text(text, timeout=DELIVERY_TIMEOUT)
        self.saw()

    def landed(self) -> None:
        """After Submit on a round: wait until the answer page has sent the person on (to the
        next round or the call page), wherever that is."""
        expect(self.page).not_to_have_url(self.clicked_on, timeout=DELIVERY_TIMEOUT)
        expect(self.page).to_have_url(re.compile(r"/(rounds|calls)/\d+/$"))
        self.saw()

    def answer_next_round(self, index: int | None = None) -> bool:
        """After Submit: on the next round's page. True if the answer page landed there
        directly (the server asked again within its wait); False if it left the person on the
        call page (a slower server), where they waited for the round's link and opened it."""
        self.landed()
        if ROUND_URL.search(self.page.url):
            self.expect_round(index)
            return True
        link = self.page.get_by_role("link", name=re.compile(r"^Answer round \d+$")).first
        expect(link).to_be_visible(timeout=DELIVERY_TIMEOUT)
        self.clicked_on = self.page.url
        link.click()
        self.saw()
        self.expect_round(index)
        return False


@pytest.fixture
def person(signed_in_page: Page, live_app: LiveApp) -> Iterator[Person]:
    someone = Person(signed_in_page, live_app)
    yield someone
    # Whatever the test did, the state stayed on the server. The catalog page is left out:
    # it shows the server's own tool descriptions, and the peer's mention requestState.
    for url, html in someone.pages_seen:
        if "/calls/start/" in url and url.rstrip("/").count("/") > 4:
            continue
        assert "requestState" not in html, f"'requestState' appears in the HTML of {url}"


def tokens_sent(peer: Peer, since: int) -> list[str]:
    """The requestState values the app sent back to ``peer`` after ``since``."""
    tokens = []
    for entry in peer.recorded(since=since):
        state = ((entry.get("json") or {}).get("params") or {}).get("requestState")
        if state:
            tokens.append(state)
    return tokens


def assert_state_never_shown(person: Person, peer: Peer, since: int) -> None:
    tokens = tokens_sent(peer, since)
    assert tokens, "the app sent no requestState back; the test proves nothing"
    for url, html in person.pages_seen:
        for token in tokens:
            assert token not in html, f"the requestState token appears in the HTML of {url}"


# -- one round, start to result ----------------------------------------------------------------


def test_start_a_call_answer_the_round_and_read_the_result(
    person: Person, peer_connection: str, fastmcp_process_peer: Peer
) -> None:
    mark = fastmcp_process_peer.mark()
    page = person.page

    person.goto("/calls/start/")
    expect(page.get_by_role("heading", name="Start a call", level=1)).to_be_visible()
    assert_accessible(page)

    person.click("link", peer_connection, exact=True)
    person.click("link", "Approve Deploy", exact=True)
    page.get_by_label("service").fill("billing")
    page.get_by_label("environment").fill("production")
    assert_accessible(page)
    person.press("Call the tool")

    person.expect_round()
    expect(page.get_by_text("Deploy billing to production?")).to_be_visible()
    expect(page.get_by_text("Tool approve_deploy on")).to_be_visible()
    # Defaults from the schema are filled in.
    expect(page.get_by_label("Replicas")).to_have_value("2")
    expect(page.get_by_label("Right now")).to_be_checked()
    expect(page.get_by_label("Approve the deployment")).not_to_be_checked()
    # The description is tied to its field.
    expect(page.get_by_label("Approve the deployment")).to_have_accessible_description(
        "Tick to go ahead."
    )
    expect(page.get_by_role("button", name="Submit", exact=True)).to_be_visible()
    expect(page.get_by_role("button", name="Decline", exact=True)).to_be_visible()
    expect(page.get_by_role("button", name="Cancel", exact=True)).to_be_visible()
    expect(page.locator("p.deadline")).to_contain_text(re.compile(r"Due in \d+ minutes — "))
    assert_accessible(page)

    page.get_by_label("Approve the deployment").check()
    page.get_by_label("Replicas").fill("4")
    page.get_by_label("Canary traffic (%)").fill("12.5")
    page.get_by_label("Tonight at 22:00").check()
    page.get_by_label("Operations").check()
    page.get_by_label("QA").check()
    page.get_by_label("Contact e-mail").fill("ops@example.com")
    page.get_by_label("Reason").fill("Quarterly release")
    person.press("Submit")

    person.expect_result("Deployed billing to production: 4 replicas, window tonight")
    expect(page.locator(".call-status")).to_contain_text("Answered")
    # The answers are on the call page, with who gave them.
    rounds = page.locator("ol.rounds")
    expect(rounds).to_contain_text("submitted")
    expect(rounds).to_contain_text(f"answered by {PERSON[0]}")
    structured = json.loads(
        page.locator("section.result details.raw-json pre").text_content() or ""
    )
    assert structured["answers"] == {
        "approve": True,
        "replicas": 4,
        "canary_percent": 12.5,
        "window": "tonight",
        "notify": ["ops", "qa"],
        "contact": "ops@example.com",
        "reason": "Quarterly release",
    }
    assert_accessible(page)

    page.get_by_role("navigation", name="Main").get_by_role("link", name="My calls").click()
    person.saw()
    expect(page.get_by_role("row", name=re.compile("approve_deploy")).first).to_be_visible()
    assert_accessible(page)
    assert_state_never_shown(person, fastmcp_process_peer, mark)


def test_invalid_answers_show_inline_errors_and_keep_what_was_typed(
    person: Person, peer_connection: str
) -> None:
    page = person.page
    person.start_tool(peer_connection, "Approve Deploy", {"service": "search"})
    person.expect_round()

    page.get_by_label("Replicas").fill("7")
    page.get_by_label("Reason").fill("Hotfix for the index")
    # The browser accepts this address; the server-side check does not (no dot in the domain).
    page.get_by_label("Contact e-mail").fill("ops@intranet")
    person.press("Submit")

    person.expect_round()
    expect(page.get_by_role("alert").first).to_contain_text("Some answers need fixing")
    contact = page.get_by_label("Contact e-mail")
    expect(contact).to_have_attribute("aria-invalid", "true")
    expect(contact).to_have_accessible_description(re.compile("valid email", re.IGNORECASE))
    # Nothing typed is lost.
    expect(contact).to_have_value("ops@intranet")
    expect(page.get_by_label("Replicas")).to_have_value("7")
    expect(page.get_by_label("Reason")).to_have_value("Hotfix for the index")
    assert_accessible(page)

    contact.fill("ops@example.com")
    person.press("Submit")
    person.expect_result("Deployment of search not approved")


# -- two rounds, decline, cancel, two questions --------------------------------------------------


def test_purchase_asks_twice(
    person: Person, peer_connection: str, fastmcp_process_peer: Peer
) -> None:
    mark = fastmcp_process_peer.mark()
    page = person.page
    person.start_tool(peer_connection, "Purchase", {"item": "teapot", "quantity": "2"})

    person.expect_round(1)
    first_round = page.url
    expect(page.get_by_text("Where should we ship 2 x teapot?")).to_be_visible()
    page.get_by_label("Address").fill("1 Harbour Road")
    page.get_by_label("Express").check()
    with page.expect_response(
        lambda response: response.request.method == "POST" and response.url == first_round,
        timeout=DELIVERY_TIMEOUT,
    ) as answered:
        person.press("Submit")

    # The server asked again while the answer page waited: the answer's own redirect sends
    # the person to round 2, never by way of the call page.
    assert person.answer_next_round(2), f"Submit left the person on {page.url}"
    assert page.url != first_round
    assert answered.value.status == 303
    assert answered.value.headers["location"] == "/" + page.url.split("/", 3)[3]
    expect(page.get_by_text("Confirm payment for 2 x teapot to 1 Harbour Road")).to_be_visible()
    page.get_by_label("Confirm payment").check()
    page.get_by_label("Coupon").fill("SPRING")
    person.press("Submit")

    person.expect_result(
        "Purchased 2 x teapot, shipping to 1 Harbour Road (express=true), coupon=SPRING"
    )
    rounds = page.locator("ol.rounds > li")
    expect(rounds).to_have_count(2)
    expect(rounds.nth(0)).to_contain_text("1 Harbour Road")
    expect(rounds.nth(1)).to_contain_text("SPRING")
    assert_state_never_shown(person, fastmcp_process_peer, mark)


def test_the_same_round_answered_in_two_tabs_is_sent_once(
    person: Person, peer_connection: str
) -> None:
    page = person.page
    person.start_tool(peer_connection, "Approve Deploy", {"service": "cache"})
    person.expect_round()
    other = page.context.new_page()
    other.goto(page.url)
    other.get_by_label("Replicas").fill("9")
    page.get_by_label("Approve the deployment").check()
    person.press("Submit")
    # The other tab hears that the round was answered, but keeps what was typed in it.
    expect(other.locator("#live-stale-notice")).to_be_visible()
    expect(other.get_by_label("Replicas")).to_have_value("9")
    other.get_by_role("button", name="Submit", exact=True).click()
    expect(other.get_by_role("heading", name="Already answered", level=1)).to_be_visible()
    expect(other.get_by_role("alert")).to_contain_text("Your answers were not sent")
    assert_accessible(other)
    other.close()
    person.expect_result("Deployed cache to staging: 2 replicas")


def test_decline(person: Person, peer_connection: str) -> None:
    person.start_tool(peer_connection, "Approve Deploy", {"service": "mailer"})
    person.expect_round()
    person.press("Decline")
    person.expect_result("Deployment of mailer declined")
    expect(person.page.locator("ol.rounds")).to_contain_text("declined")


def test_cancel_in_the_second_round(person: Person, peer_connection: str) -> None:
    page = person.page
    person.start_tool(peer_connection, "Purchase", {"item": "kettle"})
    person.expect_round()
    page.get_by_label("Address").fill("2 Mill Lane")
    person.press("Submit")
    assert person.answer_next_round(2), f"Submit left the person on {page.url}"
    person.press("Cancel")
    person.expect_result("Purchase of kettle cancelled at payment")
    expect(page.locator("ol.rounds > li").nth(1)).to_contain_text("cancelled")


def test_two_questions_on_one_page(person: Person, peer_connection: str) -> None:
    page = person.page
    person.start_tool(peer_connection, "Two Questions", {})
    person.expect_round()
    sections = page.locator("fieldset.question")
    expect(sections).to_have_count(2)
    expect(sections.nth(0).locator("legend").first).to_contain_text("What is your name?")
    expect(sections.nth(1).locator("legend").first).to_contain_text("Pick a favourite (colors)")
    expect(page.get_by_role("button", name="Submit", exact=True)).to_have_count(1)
    page.get_by_label("Name").fill("Ada")
    page.get_by_label("green").check()
    assert_accessible(page)
    shoot(page, "round-two-questions")
    person.press("Submit")
    person.expect_result("Ada likes green")


# -- every field kind ----------------------------------------------------------------------------


def test_every_field_kind(person: Person, peer_connection: str) -> None:
    page = person.page
    person.start_tool(peer_connection, "All Field Kinds", {})
    person.expect_round()
    assert_accessible(page)

    page.get_by_label("Free text").fill("hello")
    page.get_by_label("email").fill("ada@example.com")
    page.get_by_label("website").fill("https://example.com/ada")
    page.get_by_label("birthday").fill("1815-12-10")
    page.get_by_label("meeting").fill("2030-01-02T09:30:00")
    page.get_by_label("count").fill("7")
    page.get_by_label("ratio").fill("0.25")
    page.get_by_label("agree").uncheck()
    page.get_by_label("medium").check()
    page.get_by_label("Green").check()
    page.get_by_label("Option B").check()
    page.get_by_label("cheese").check()
    page.get_by_label("olives").check()
    page.get_by_label("Tuesday").check()
    page.get_by_label("Monday").uncheck()
    shoot(page, "round-all-kinds", at=page.locator("fieldset.question legend").first)
    shoot(page, "round-all-kinds-choices", at=page.get_by_role("group", name="size"))
    person.press("Submit")

    person.expect_result('"action": "accept"')
    structured = json.loads(
        page.locator("section.result details.raw-json pre").text_content() or ""
    )
    assert structured["content"] == {
        "text": "hello",
        "email": "ada@example.com",
        "website": "https://example.com/ada",
        "birthday": "1815-12-10",
        "meeting": structured["content"]["meeting"],
        "count": 7,
        "ratio": 0.25,
        "agree": False,
        "size": "medium",
        "color": "#0f0",
        "legacy": "b",
        "toppings": ["cheese", "olives"],
        "days": ["tue"],
    }
    assert structured["content"]["meeting"].startswith("2030-01-02T09:30:00")
    assert structured["types"]["count"] == "int"
    assert structured["types"]["ratio"] == "float"
    assert structured["types"]["agree"] == "bool"


# -- URL mode ------------------------------------------------------------------------------------


def test_url_mode_asks_consent_before_the_link(
    person: Person, peer_connection: str, fastmcp_process_peer: Peer
) -> None:
    page = person.page
    person.start_tool(peer_connection, "Url Login", {"provider": "acme"})
    person.expect_round()
    expect(page.get_by_text("Sign in to acme to continue")).to_be_visible()
    url_text = page.locator(".url-full").inner_text().strip()
    assert url_text.startswith(f"{fastmcp_process_peer.base_url}/authorize?ref=")
    expect(page.locator(".url-host")).to_contain_text("127.0.0.1")
    # No link at all before the person agrees.
    expect(page.get_by_role("link", name="Open", exact=True)).to_have_count(0)
    assert page.locator(f'a[href="{url_text}"]').count() == 0
    assert_accessible(page)

    person.click("button", "I agree to open this link")
    open_link = page.get_by_role("link", name="Open", exact=True)
    expect(open_link).to_have_attribute("href", url_text)
    expect(open_link).to_have_attribute("target", "_blank")
    rel = (open_link.get_attribute("rel") or "").split()
    assert {"noopener", "noreferrer"} <= set(rel), rel
    assert_accessible(page)

    with page.context.expect_page() as opened:
        open_link.click()
    tab = opened.value
    tab.wait_for_load_state()
    assert tab.url == url_text
    tab.close()

    person.press("I've finished")
    person.expect_result("Connected to acme")
    structured = json.loads(
        page.locator("section.result details.raw-json pre").text_content() or ""
    )
    assert structured["visited"] is True


# -- expiry --------------------------------------------------------------------------------------


def test_expired_state_then_start_again_with_answers_kept(
    person: Person, short_ttl_connection: str
) -> None:
    page = person.page
    person.start_tool(short_ttl_connection, "Approve Deploy", {"service": "ledger"})
    person.expect_round()
    page.get_by_label("Approve the deployment").check()
    page.get_by_label("Replicas").fill("3")
    page.get_by_label("This weekend").check()
    page.get_by_label("Developers").check()
    page.get_by_label("Reason").fill("Weekend maintenance")
    # The server keeps its requestState for 2 s.
    time.sleep(2.5)
    person.press("Submit")

    expect(page.locator(".call-status")).to_contain_text("Expired", timeout=DELIVERY_TIMEOUT)
    person.saw()
    expect(
        page.get_by_role("heading", name="The server no longer accepts this round")
    ).to_be_visible()
    assert_accessible(page)
    shoot(page, "call-expired")

    person.press("Start again")
    person.expect_round()
    expect(page.get_by_label("Approve the deployment")).to_be_checked()
    expect(page.get_by_label("Replicas")).to_have_value("3")
    expect(page.get_by_label("This weekend")).to_be_checked()
    expect(page.get_by_label("Developers")).to_be_checked()
    expect(page.get_by_label("Operations")).not_to_be_checked()
    expect(page.get_by_label("Reason")).to_have_value("Weekend maintenance")
    shoot(page, "round-restarted")
    person.press("Submit")
    person.expect_result("Deployed ledger to staging: 3 replicas, window weekend")
    expect(page.get_by_text(re.compile(r"Started again from"))).to_be_visible()


# -- while answers are on their way --------------------------------------------------------------


def test_call_page_while_delivering_is_accessible(
    person: Person, slow_connection: str, slow_peer: SlowPeer
) -> None:
    """A server slower than the answer page waits: the person lands on the call page while
    the answers are still on their way, and it updates itself with the next round."""
    page = person.page
    person.start_tool(slow_connection, "greet", {"city": "Oslo"})
    person.expect_round(1)
    expect(page.get_by_text("What is your name?")).to_be_visible()
    page.get_by_label("name").fill("Ada")
    first_round = page.url
    mark = slow_peer.mark()
    slow_peer.slow_down(SLOW_SERVER_DELAY)
    with page.expect_response(
        lambda response: response.request.method == "POST" and response.url == first_round,
        timeout=DELIVERY_TIMEOUT,
    ) as answered:
        person.press("Submit")

    # The answer page waited for the server, in vain, and sent the person to the call page.
    person.landed()
    expect(page).to_have_url(CALL_URL)
    assert answered.value.status == 303
    assert answered.value.headers["location"] == "/" + page.url.split("/", 3)[3]
    expect(page.get_by_role("status").first).to_contain_text("Delivering your answers")
    expect(page.locator("ol.rounds > li").first).to_contain_text("being sent")
    shoot(page, "call-delivering")
    violations = axe_violations(page)
    # axe ran on the delivering page: the server had not handled the answers yet, and the
    # page had not moved on.
    assert slow_peer.resubmissions(since=mark) == [], "the answers arrived before axe was done"
    expect(page.get_by_role("status").first).to_contain_text("Delivering your answers")
    assert not violations, format_violations(violations)

    # The page offers the next round by itself once the server has asked again.
    assert not person.answer_next_round(2), "expected the call page to offer round 2"
    expect(page.get_by_text("How old are you, Ada?")).to_be_visible()
    page.get_by_label("age").fill("36")
    person.press("Submit")
    person.expect_result("Ada 36 Oslo")
    # Each round's answers were handled once: the safety-net task, due while the slow server
    # was still answering, left the claimed round alone.
    assert len(slow_peer.resubmissions(since=mark)) == 2
