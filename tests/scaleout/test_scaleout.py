"""The scale-out setup end to end: a round parked through web process A is answered through web
process B, delivered by B itself (the process that takes an answer sends it; the task worker
only holds its safety net), and the result appears live, without a reload, in a browser
connected to A (the event crosses processes through Redis)."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import pytest

from mrtrweb.elicitation import field_name_for, prefix_for_key
from tests.scaleout.conftest import CALLER, Topology, start_call
from tests.support import second_factor
from tests.support.web import csrf_token

try:
    from playwright.sync_api import expect
except ImportError:  # the `browser` fixture fails the test with the reason
    expect = None  # type: ignore[assignment]

NAME = "Scale-out Sam"
PROCESSES = ("web_a", "web_b", "worker")

# Set before any page script runs: htmx's ws extension announces an open socket with
# htmx:wsOpen, which bubbles to the document.
_WATCH = """
window.__wsOpen = [];
document.addEventListener("htmx:wsOpen", (event) => {
  window.__wsOpen.push(event.target.getAttribute("ws-connect") || "");
});
"""


def _sign_in(page: Any, username: str, password: str) -> None:
    """Through the real login page of web process A."""
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.wait_for_load_state()
    second_factor.pass_code_page_in_browser(page)
    assert "/login/" not in page.url, f"still on the login page: {page.url}"


def _answer_through(base_url: str, session_key: str, round_id: int) -> None:
    with httpx.Client(base_url=base_url, cookies={"sessionid": session_key}, timeout=30) as web:
        form = web.get(f"/rounds/{round_id}/")
        assert form.status_code == 200, form.text[:2000]
        posted = web.post(
            f"/rounds/{round_id}/",
            data={
                "action": "accept",
                "csrfmiddlewaretoken": csrf_token(form.text),
                f"{prefix_for_key('name')}-{field_name_for('name')}": NAME,
                # Choices are posted by their index: "0" is red.
                f"{prefix_for_key('color')}-{field_name_for('color')}": "0",
            },
        )
        assert posted.status_code == 303, posted.text[:2000]


def test_parked_on_a_answered_and_delivered_on_b_seen_live_on_a(
    topology: Topology, browser: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    call_id, round_id = start_call(topology.url_a, topology.sessions[CALLER[0]][0], "two_questions")

    context = browser.new_context(base_url=topology.url_a, viewport={"width": 1200, "height": 800})
    context.set_default_timeout(15_000)
    try:
        page = context.new_page()
        page.add_init_script(_WATCH)
        frames: list[str] = []
        sockets: list[str] = []

        def on_socket(socket: Any) -> None:
            sockets.append(socket.url)
            if f"/ws/calls/{call_id}/" in socket.url:  # the call's socket, not the inbox's
                socket.on("framereceived", lambda payload: frames.append(str(payload)))

        page.on("websocket", on_socket)
        _sign_in(page, *CALLER)
        page.goto(f"/calls/{call_id}/")
        # The call's socket is open (so subscribed to its group): only now may the answer go.
        # A function, not an expression: Playwright evals an expression in the page, which
        # the site's CSP (no 'unsafe-eval') refuses.
        page.wait_for_function(
            f"() => window.__wsOpen.some((url) => url.startsWith('/ws/calls/{call_id}/'))"
        )
        live_url = f"ws://127.0.0.1:{topology.url_a.rsplit(':', 1)[1]}/ws/calls/{call_id}/"
        assert any(url.startswith(live_url) for url in sockets), sockets
        # Marks this document: a reload would make a new one without the mark.
        page.evaluate("window.__sameDocument = true")
        assert page.get_by_text(f"{NAME} likes red").count() == 0

        answered = time.monotonic()
        _answer_through(topology.url_b, topology.sessions["admin1"][0], round_id)
        expect(page.get_by_text(f"{NAME} likes red").first).to_be_visible(timeout=20_000)
        seen = time.monotonic() - answered

        # B's "completed" event reaches A's socket through Redis. (Frames carry no one's
        # data: they make the page fetch itself again through its view, over HTTP.) The text
        # may show first: the "answered" frame's fetch can land once the result is stored,
        # while A's socket still checks the person for the events queued before "completed".
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and not any(
            'data-live-kind="completed"' in frame for frame in frames
        ):
            page.wait_for_timeout(100)  # lets Playwright deliver the frames received
        live = [frame for frame in frames if "data-live-kind" in frame]
        assert any('data-live-kind="completed"' in frame for frame in live), frames
        assert page.evaluate("window.__sameDocument") is True, "the page was reloaded"
        topology.check_alive()
    finally:
        context.close()

    # Each process logged, as JSON lines, the events it caused: A parked, B took the answer and
    # delivered it; the worker's safety net found it delivered and did nothing (it is due 5 s
    # after the answer: wait for it). Nobody logged the answer itself.
    time.sleep(6)
    kinds = {name: [e["kind"] for e in topology.events(name, call_id)] for name in PROCESSES}
    assert "round_parked" in kinds["web_a"], kinds
    assert {"answered", "delivered", "completed"} <= set(kinds["web_b"]), kinds
    assert kinds["worker"] == [], kinds
    assert "answered" not in kinds["worker"] + kinds["web_a"], kinds
    for name in PROCESSES:
        assert NAME not in topology.app.log(name)
    # uvicorn's own access lines go through the same JSON formatter.
    access = [
        json.loads(line)
        for line in topology.app.log("web_b").splitlines()
        if line.startswith("{") and '"uvicorn.access"' in line
    ]
    assert any(f"/rounds/{round_id}/" in line["message"] for line in access), access[-5:]

    with capsys.disabled():
        print(
            f"\n[scale-out] {topology.report()}\n"
            f"[scale-out] call {call_id}: parked through A, answered and delivered through B, "
            f"result live in the browser on A {seen:.2f}s after the answer "
            f"({len(live)} live frames over {live_url})"
        )
