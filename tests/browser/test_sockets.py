"""Who may listen to a person's live updates, in the person's own browser.

Cookies belong to a host, not to a port: a page served from another port of 127.0.0.1, open
in a tab beside the person's, sends the person's session cookie with every websocket it opens
to the app. The app refuses those sockets (the page's origin is not its own), while the
person's own tab goes on hearing.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

import pytest

from .conftest import PERSON, LiveApp, expect, sign_in
from .test_live import LIVE_TIMEOUT, live_socket_open, mark_document, same_document, start_call

if TYPE_CHECKING:
    from playwright.sync_api import Page

pytestmark = pytest.mark.browser

# The other port's page: opens the app's sockets it is given in ?ws=, and writes down every
# thing each socket does into window.spied (a list of [url, what, detail]).
SPY_PAGE = b"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Another site</title></head>
<body><h1>Just another page</h1>
<script>
window.spied = [];
for (const url of new URLSearchParams(location.search).getAll("ws")) {
  const socket = new WebSocket(url);
  socket.onopen = () => window.spied.push([url, "open", ""]);
  socket.onmessage = (e) => window.spied.push([url, "message", String(e.data)]);
  socket.onclose = (e) => window.spied.push([url, "close", e.code]);
}
</script>
</body></html>
"""


class _SpyHandler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(SPY_PAGE)))
        self.end_headers()
        self.wfile.write(SPY_PAGE)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


@pytest.fixture(scope="module")
def other_port_site() -> Iterator[str]:
    """A page served from another port of 127.0.0.1: ``http://127.0.0.1:<port>``."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _SpyHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def spied(page: Page) -> list[list[Any]]:
    return list(page.evaluate("window.spied"))


def test_a_page_on_another_port_hears_nothing_while_the_person_s_own_tab_does(
    signed_in_page: Page, live_app: LiveApp, peer_connection: str, other_port_site: str
) -> None:
    call = start_call(live_app, peer_connection, "purchase", {"item": "kettle"})
    own = signed_in_page
    own.goto("/inbox/")
    first = own.locator(f"#round-{call['round']['id']}")
    expect(first).to_be_visible()
    live_socket_open(own, "#live-inbox-socket")
    mark_document(own)

    # A second tab in the same browser (same cookies) on a page from another port.
    ws_base = live_app.base_url.replace("http://", "ws://")
    targets = [f"{ws_base}/ws/inbox/", f"{ws_base}/ws/calls/{call['id']}/?view=call"]
    spy = own.context.new_page()
    spy.goto(other_port_site + "/?" + "&".join(f"ws={t}" for t in targets))
    # Both sockets have been answered (opened, or refused), before anything happens.
    spy.wait_for_function("() => new Set(window.spied.map((e) => e[0])).size === 2")

    # Elsewhere (a third tab), the round is answered: the server asks its next round.
    answering = own.context.new_page()
    answering.goto(call["round"]["url"])
    answering.get_by_label("Address").fill("2 Origin Road")
    answering.get_by_role("button", name="Submit", exact=True).click()

    # The person's own tab hears it.
    expect(first).to_have_count(0, timeout=LIVE_TIMEOUT)
    expect(own.locator("#inbox-pending")).to_contain_text(
        "Confirm payment for 1 x kettle to 2 Origin Road", timeout=LIVE_TIMEOUT
    )
    assert same_document(own), "the page was reloaded"

    # The other port's page heard nothing: no socket opened, no message, refused with 1006
    # (the browser's code for a handshake the server turned down).
    events = spied(spy)
    assert sorted(e[0] for e in events) == sorted(targets), events
    assert all(e[1] == "close" and e[2] == 1006 for e in events), events


# Records what every socket of the page hears and how it ends: window.heard, [url, what, detail].
RECORD_SOCKETS = """
window.heard = [];
const NativeWebSocket = window.WebSocket;
window.WebSocket = class extends NativeWebSocket {
  constructor(...args) {
    super(...args);
    const note = (what, detail) => window.heard.push([this.url, what, detail]);
    this.addEventListener("message", (e) => note("message", String(e.data)));
    this.addEventListener("close", (e) => note("close", e.code));
  }
};
"""


def test_a_tab_left_open_after_signing_out_elsewhere_stops_hearing(
    browser: Any,
    live_app: LiveApp,
    peer_connection: str,
    signed_in_page: Page,
) -> None:
    call = start_call(live_app, peer_connection, "purchase", {"item": "desk"})
    first = f"#round-{call['round']['id']}"
    # A browser of its own, signed in through the login page: its session is ended here,
    # not the one the other tests share.
    context = browser.new_context(
        base_url=live_app.base_url, viewport={"width": 1200, "height": 800}
    )
    context.set_default_timeout(15_000)
    try:
        context.add_init_script(RECORD_SOCKETS)
        left_open = context.new_page()
        sign_in(left_open, *PERSON, next_path="/inbox/")
        expect(left_open.locator(first)).to_be_visible()
        live_socket_open(left_open, "#live-inbox-socket")

        # The same person, signed in in another browser, watches their inbox too.
        elsewhere = signed_in_page
        elsewhere.goto("/inbox/")
        expect(elsewhere.locator(first)).to_be_visible()
        live_socket_open(elsewhere, "#live-inbox-socket")

        # Another tab of the first browser signs out.
        other_tab = context.new_page()
        other_tab.goto("/")
        other_tab.get_by_role("button", name="Sign out").click()
        other_tab.wait_for_load_state()

        # The tab left open has its socket closed as "not signed in" (htmx leaves it closed).
        left_open.wait_for_function(
            "() => window.heard.some((e) => e[0].includes('/ws/inbox/') && e[1] === 'close')"
        )
        assert [e[2] for e in left_open.evaluate("window.heard") if e[1] == "close"] == [4401]

        # In the other browser the round is answered and the server asks the next one: that
        # browser's inbox follows, the signed-out tab hears nothing.
        answering = elsewhere.context.new_page()
        answering.goto(call["round"]["url"])
        answering.get_by_label("Address").fill("3 Signed Out Street")
        answering.get_by_role("button", name="Submit", exact=True).click()
        expect(elsewhere.locator("#inbox-pending")).to_contain_text(
            "Confirm payment for 1 x desk to 3 Signed Out Street", timeout=LIVE_TIMEOUT
        )
        expect(elsewhere.locator(first)).to_have_count(0)
        left_open.wait_for_timeout(500)
        assert not [e for e in left_open.evaluate("window.heard") if e[1] == "message"]
        expect(left_open.locator(first)).to_be_visible()  # as it was: nothing came
    finally:
        context.close()
