"""Pages update themselves: a person watching a round page, or their inbox, sees what others
(and the server) do, without reloading; without JavaScript, a call's page reloads itself once
the server answered (its reload held meanwhile, not repeated every second).

The app runs as ``make run`` runs it without Redis: one uvicorn process that also runs the task
worker (conftest.py), so the events raised while delivering reach the browsers' sockets.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from tests.peers.fixtures import Peer, start_peer
from tests.support import terminal_calls

from .conftest import PERSON, LiveApp, _close, _new_page, assert_accessible, expect

if TYPE_CHECKING:
    from playwright.sync_api import Page

pytestmark = pytest.mark.browser

LIVE_TIMEOUT = 20_000
# Set on the page's window; a reload would lose it.
MARK = "window.__sameDocument"


@pytest.fixture(scope="module")
def progress_connection(live_app: LiveApp) -> Iterator[str]:
    """A connection to tests/live/progress_peer.py (streams progress while it works)."""
    peer: Peer = start_peer("tests.live.progress_peer")
    try:
        live_app.manage("mcp_server", "add", "--name", "progress", "--url", peer.url)
        yield "progress"
    finally:
        peer.stop()


@pytest.fixture
def second_page(browser: Any, live_app: LiveApp, person_session: dict[str, Any]) -> Iterator[Any]:
    """The same person in another browser (another context): what "elsewhere" means here."""
    other = _new_page(browser, live_app, storage_state=person_session)
    try:
        yield other
    finally:
        _close(other)


def start_call(app: LiveApp, server: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Start a call as PERSON from a terminal (``manage.py mcp_call``); returns its JSON."""
    return terminal_calls.start_call(app, server, tool, arguments, user=PERSON[0])


def mark_document(page: Page) -> None:
    page.evaluate(f"{MARK} = true")


def same_document(page: Page) -> bool:
    return bool(page.evaluate(f"{MARK} === true"))


def live_socket_open(page: Page, selector: str) -> None:
    """Wait until htmx's ws extension has opened the socket held by ``selector``."""
    page.wait_for_function(
        "s => { const e = document.querySelector(s);"
        " const d = e && e['htmx-internal-data'];"
        " const w = d && d.webSocket;"
        " return !!(w && w.socket && w.socket.readyState === 1); }",
        arg=selector,
    )


def test_a_watched_round_page_shows_delivery_progress_and_the_result(
    signed_in_page: Page, second_page: Page, live_app: LiveApp, progress_connection: str
) -> None:
    call = start_call(
        live_app, progress_connection, "confirm_then_work", {"steps": 3, "delay": 0.8}
    )
    round_url = call["round"]["url"]
    watcher = signed_in_page
    watcher.goto(round_url)
    expect(watcher.get_by_role("heading", level=1)).to_have_text("The server needs your input")
    live_socket_open(watcher, "#live-call-socket")
    mark_document(watcher)

    # Elsewhere, the round is answered.
    second_page.goto(round_url)
    second_page.get_by_label("Go").check()
    second_page.get_by_role("button", name="Submit", exact=True).click()

    # The watcher's page follows: delivering, the server's progress, then the result.
    expect(watcher.get_by_role("status").first).to_contain_text(
        "Delivering your answers", timeout=LIVE_TIMEOUT
    )
    bar = watcher.get_by_label("Progress")
    expect(bar).to_be_visible(timeout=LIVE_TIMEOUT)
    # The server's message is shown as it sent it: text, never markup.
    expect(watcher.locator(".progress-message")).to_have_text(
        re.compile(r"^<b>step</b> [123] of 3$"), timeout=LIVE_TIMEOUT
    )
    expect(watcher.locator("[data-live-kind='progress'][data-live-at]")).to_have_count(1)
    assert_accessible(watcher)

    expect(watcher.locator("section.result")).to_contain_text(
        "worked 3 steps", timeout=LIVE_TIMEOUT
    )
    expect(watcher).to_have_url(re.compile(rf"/calls/{call['id']}/$"))
    assert same_document(watcher), "the page was reloaded"
    kind = watcher.locator(f"#live-call-{call['id']}").get_attribute("data-live-kind")
    assert kind == "completed"
    assert_accessible(watcher)

    # A reload shows the same truth.
    watcher.reload()
    expect(watcher.locator("section.result")).to_contain_text("worked 3 steps")


def test_the_inbox_gains_and_loses_rounds_without_a_reload(
    signed_in_page: Page, second_page: Page, live_app: LiveApp, peer_connection: str
) -> None:
    call = start_call(live_app, peer_connection, "purchase", {"item": "lamp"})
    inbox = signed_in_page
    inbox.goto("/inbox/")
    first = inbox.locator(f"#round-{call['round']['id']}")
    expect(first).to_be_visible()
    live_socket_open(inbox, "#live-inbox-socket")
    mark_document(inbox)
    count = int(inbox.locator("#inbox-count").inner_text())

    # Elsewhere, round 1 is answered; the worker delivers it and the server asks round 2.
    second_page.goto(call["round"]["url"])
    second_page.get_by_label("Address").fill("1 Live Street")
    second_page.get_by_role("button", name="Submit", exact=True).click()

    expect(first).to_have_count(0, timeout=LIVE_TIMEOUT)
    expect(inbox.locator("#inbox-pending")).to_contain_text(
        "Confirm payment for 1 x lamp to 1 Live Street", timeout=LIVE_TIMEOUT
    )
    expect(inbox.locator("#inbox-count")).to_have_text(str(count), timeout=LIVE_TIMEOUT)
    assert same_document(inbox), "the page was reloaded"
    assert inbox.locator("#live-inbox").get_attribute("data-live-kind")
    assert_accessible(inbox)


# Longer than the served app's MRTRWEB_START_WAIT (1 s by default), so the start page leaves
# the person on the call page while the server works; long enough that a page reloading itself
# every second would have fetched live:next four times before the result (twice the allowance).
SLOW_SECONDS = 5


def test_without_javascript_a_slow_calls_page_shows_the_result_after_one_held_reload(
    browser: Any, live_app: LiveApp, person_session: dict[str, Any], peer_connection: str
) -> None:
    page = _new_page(browser, live_app, storage_state=person_session, java_script_enabled=False)
    try:
        # Each time the call page reloads itself, through live:next (?hold=1).
        reloads: list[str] = []
        next_step = re.compile(r"/live/calls/\d+/next/")
        page.on("request", lambda r: reloads.append(r.url) if next_step.search(r.url) else None)

        page.goto(f"/calls/start/{peer_connection}/?tool=sleep")
        page.get_by_label("seconds").fill(str(SLOW_SECONDS))
        began = time.monotonic()
        page.get_by_role("button", name="Call the tool", exact=True).click()

        # The start page did not wait for the server: the call page says it is working...
        expect(page).to_have_url(re.compile(r"/calls/\d+/$"))
        call_url = page.url
        expect(page.get_by_role("status")).to_contain_text("The server is working on the call")
        expect(page.locator("section.result")).to_have_count(0)

        # ...then, with no click, the same page shows what the server answered.
        result = page.locator("section.result")
        expect(result).to_contain_text(f"slept {SLOW_SECONDS}", timeout=LIVE_TIMEOUT)
        took = time.monotonic() - began
        assert page.url == call_url
        expect(page.get_by_role("status")).to_have_count(0)

        # One reload, held until the server answered: a page reloading itself every second
        # would have made four by now (SLOW_SECONDS). The hold let go as soon as the result was
        # there, not after HOLD_SECONDS (15).
        assert len(reloads) <= 2, f"live:next fetched {len(reloads)} times: {reloads}"
        assert all(url.endswith("?hold=1") for url in reloads), reloads
        assert took < SLOW_SECONDS + 5, f"the result showed {took:.1f} s after the start"
        # And the finished call's page reloads itself no more.
        page.wait_for_timeout(1500)
        assert len(reloads) <= 2, f"live:next fetched {len(reloads)} times: {reloads}"
        assert page.url == call_url
    finally:
        _close(page)
