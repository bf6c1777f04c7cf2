"""Handshake-era servers in Chromium: the mcp 1.x FastMCP peer and the TypeScript SDK 1.x peer.

A person starts their tools from the same pages, answers their questions on the same round
pages (same fields, validation, URL consent, Decline and Cancel) and reads the results the
same way as on a 2026-07-28 server; only the deadline differs: the connection's question
deadline (ten minutes unless set), shown as "answer before" like any other. Each peer counts
the answers it received: every one was sent exactly once, and every session was closed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from tests.peers.mcp1 import Mcp1Peer

from .conftest import LiveApp, assert_accessible, expect
from .test_rounds import CALL_URL, Person

if TYPE_CHECKING:
    from playwright.sync_api import Page

pytestmark = pytest.mark.browser

PEERS = {"mcp1": "mcp1_peer", "ts": "ts_peer"}


@pytest.fixture(scope="module")
def handshake_peers(
    live_app: LiveApp, mcp1_peer: Mcp1Peer, ts_peer: Mcp1Peer
) -> dict[str, Mcp1Peer]:
    peers = {"old-mcp1": mcp1_peer, "old-ts": ts_peer}
    for name, peer in peers.items():
        live_app.manage("mcp_server", "add", "--name", name, "--url", peer.url)
    return peers


@pytest.fixture(params=sorted(PEERS))
def server(request: pytest.FixtureRequest, handshake_peers: dict[str, Mcp1Peer]) -> Iterator[str]:
    """A handshake-era connection's name; afterwards every session it opened is closed."""
    name = f"old-{request.param}"
    peer = handshake_peers[name]
    before = peer.sessions()
    yield name
    after = peer.sessions()
    assert after["active"] == before["active"], after


@pytest.fixture
def person(signed_in_page: Page, live_app: LiveApp) -> Person:
    return Person(signed_in_page, live_app)


def _answers(peer: Mcp1Peer) -> list[str | None]:
    return [a["action"] for a in peer.answers()]


def reach_round(person: Person, index: int | None = None) -> None:
    """Go on to the round a start asked for, as a person would: the start page leads to it
    when the server asked within ``MRTRWEB_START_WAIT``; a peer in a process of its own can
    take longer on a busy machine, and then the call page links to the round once it comes."""
    page = person.page
    expect(page).to_have_url(re.compile(r"/(rounds|calls)/\d+/$"))
    if CALL_URL.search(page.url):
        page.get_by_role("link", name=re.compile(r"^Answer round \d+$")).first.click()
    person.expect_round(index)


def test_a_plain_tool(person: Person, server: str) -> None:
    person.start_tool(server, "echo", {"text": "héllo"})
    person.expect_result("echo: héllo")


def test_asks_twice(person: Person, server: str, handshake_peers: dict[str, Mcp1Peer]) -> None:
    page = person.page
    peer = handshake_peers[server]
    seen = len(peer.answers())
    person.start_tool(server, "ask_twice", {})
    reach_round(person, 1)
    expect(page.get_by_text("What is your name?")).to_be_visible()
    # The stream's deadline is this round's: ten minutes, shown as any round's.
    expect(page.locator("p.deadline time")).to_have_text(re.compile(r"^in (9|10) minutes"))
    assert_accessible(page)
    # The same fields: the server's required name is required here too (the API test proves
    # the server-side check), and nothing was sent while the person reads.
    name = page.get_by_label(re.compile(r"^name", re.I))
    expect(name).to_have_attribute("required", "")
    assert _answers(peer)[seen:] == []

    name.fill("Ada")
    person.press("Submit")
    person.answer_next_round(2)
    expect(page.get_by_text("Hello Ada: your favourite colour?")).to_be_visible()
    colour = page.get_by_label(re.compile(r"^colou?r", re.I))
    expect(colour).to_have_value("blue")  # the server's default, filled in
    colour.fill("teal")
    person.press("Submit")
    person.expect_result("Ada likes teal")
    expect(page.locator("ol.rounds > li")).to_have_count(2)
    assert _answers(peer)[seen:] == ["accept", "accept"]


def test_a_url_mode_question(
    person: Person, server: str, handshake_peers: dict[str, Mcp1Peer]
) -> None:
    page = person.page
    person.start_tool(server, "url_question", {})
    reach_round(person)
    expect(page.get_by_text("Sign in to continue")).to_be_visible()
    url_text = page.locator(".url-full").inner_text().strip()
    assert url_text.startswith(f"{handshake_peers[server].base_url}/authorize?ref=")
    expect(page.get_by_role("link", name="Open", exact=True)).to_have_count(0)
    person.click("button", "I agree to open this link")
    expect(page.get_by_role("link", name="Open", exact=True)).to_have_attribute("href", url_text)
    person.press("I've finished")
    person.expect_result("url: accept")


def test_decline(person: Person, server: str) -> None:
    person.start_tool(server, "ask_twice", {})
    reach_round(person)
    person.press("Decline")
    person.expect_result("stopped at name: decline")
    expect(person.page.locator("ol.rounds")).to_contain_text("declined")


def test_cancel_in_the_second_round(person: Person, server: str) -> None:
    page = person.page
    person.start_tool(server, "ask_twice", {})
    reach_round(person)
    page.get_by_label(re.compile(r"^name", re.I)).fill("Bo")
    person.press("Submit")
    person.answer_next_round(2)
    person.press("Cancel")
    person.expect_result("stopped at color: cancel")
    expect(page.locator("ol.rounds > li").nth(1)).to_contain_text("cancelled")
