"""Every attack of the hostile-server corpus, met through the real pages in Chromium.

For each attack (tests/peers/_hostile_corpus.py) the person starts the call from the start
page, answers its round where there is one, and opens the call page; an operator walks the
console pages of attacks on the catalog, and an admin opens the call's audit trail. All the
while the tripwires (tripwires.py) watch: no dialog, no script run, nothing injected, no
request or navigation off the app's origin, no secret in a page, no 5xx, no canary hit, a
responsive web process of bounded size; and the call ends as the attack says (never left
running, no round left delivering), with a plain message.

``test_each_tripwire_fires`` proves every tripwire catches what it looks for.

Attacks that need defences being built on the ``limits`` branch are xfailed (strict) below,
each marked for the coordinator to delete once merged; they count as not held.
"""

from __future__ import annotations

import email
import time
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest

from tests.browser.conftest import LiveApp, _new_page
from tests.browser.hostile.conftest import PERSON_EMAIL, SECRETS, TOKEN_SECRET, connection_name
from tests.browser.hostile.tripwires import CallState, Pinger, Tripwires, call_state, rss_mb, settle
from tests.peers._hostile_corpus import ATTACKS, Attack
from tests.peers.fixtures import Peer

pytestmark = pytest.mark.browser

# The web process must answer /healthz this fast all along an attack, and stay this small.
SLOWEST_PING = 3.0
MAX_RSS_MB = 1500.0
# No page may take longer than this to load, twice in a row, whatever the server sent.
SLOWEST_PAGE = 10.0


def _params() -> list[Any]:
    return [pytest.param(attack, id=attack.slug) for attack in ATTACKS]


class Visit:
    """One attack's walk through the pages, with everything the tripwires found."""

    def __init__(
        self,
        attack: Attack,
        app: LiveApp,
        peer: Peer,
        person: Tripwires,
        operator: Tripwires,
        admin: Tripwires,
    ) -> None:
        self.attack = attack
        self.app = app
        self.peer = peer
        self.conn = connection_name(attack.slug)
        self.people = (person, operator, admin)
        self.starter = operator if attack.flow in ("prompt", "resource") else person
        self.problems: list[str] = []
        self.timings: list[str] = []  # each page load, for the failure message
        for each in self.people:
            each.reset()

    @property
    def db(self) -> Any:
        return self.app.root / "var" / "db.sqlite3"

    def goto(self, who: Tripwires, path: str, where: str) -> Any:
        response, took = self._load(who, path)
        self.timings.append(f"{where} {took:.1f}s")
        if took > SLOWEST_PAGE:
            # Once more: a page the server's content makes slow is slow every time, while
            # the suite's busiest minutes (browsers and app stacks starting on every worker)
            # made a 3.3 s page take 11.2 s once.
            response, again = self._load(who, path)
            self.timings.append(f"{where} again {again:.1f}s")
            if again > SLOWEST_PAGE:
                self.problems.append(f"{where} took {took:.1f}s to load, and {again:.1f}s again")
        if response is not None and response.status >= 500:
            self.problems.append(f"{where} answered HTTP {response.status}")
        who.inspect(where)
        return response

    @staticmethod
    def _load(who: Tripwires, path: str) -> tuple[Any, float]:
        began = time.monotonic()
        response = who.page.goto(path)
        return response, time.monotonic() - began

    def click(self, who: Tripwires, selector: str, where: str) -> None:
        with who.page.expect_navigation(
            wait_until="load", timeout=max(15_000, self.attack.settle * 1000)
        ) as navigation:
            who.page.locator(selector).first.click()
        response = navigation.value
        # Every button the flows press must work: a refusal (a 400 for a post Django finds too
        # big, say) would leave the person stuck.
        if response is not None and response.status >= 400:
            self.problems.append(f"{where} answered HTTP {response.status}")
        who.inspect(where)

    # -- the flows ---------------------------------------------------------------------------

    def start(self) -> None:
        who = self.starter
        start_url = f"/calls/start/{self.conn}/"
        if self.attack.flow == "probe":
            self.goto(who, start_url, "the catalog")
            return
        # The start form shows the whole catalog below it.
        kind, value = {
            "prompt": ("prompt", "attack"),
            "resource": ("resource", "hostile://resource/1"),
        }.get(self.attack.flow, ("tool", self.attack.tool))
        self.goto(who, f"{start_url}?{urlencode({kind: value})}", "the catalog and start form")
        self.click(who, 'button[name="start"]', "the page after starting")

    def pending_round(self) -> int:
        deadline = time.monotonic() + self.attack.settle
        while time.monotonic() < deadline:
            state = call_state(self.db, self.conn)
            if state is not None and state.status == "waiting":
                pending = [rid for rid, status in state.rounds if status == "pending"]
                if pending:
                    return pending[-1]
            if state is not None and state.status not in ("running", "waiting"):
                break
            time.sleep(0.2)
        raise AssertionError(f"no round to answer: {call_state(self.db, self.conn)}")

    def answer(self) -> None:
        who = self.starter
        round_id = self.pending_round()
        self.goto(who, f"/rounds/{round_id}/", "the round page")
        self.round_page_checks()
        action = self.attack.answer
        if action == "consent-cancel":
            # Agree to open every URL that may be opened at all (nothing is fetched by that),
            # then cancel: a URL-only round has no Decline.
            consents = who.page.locator('button[name="consent"]')
            for _ in range(consents.count()):
                self.click(who, 'button[name="consent"]', "the round page after consenting")
            action = "cancel"
        self.click(who, f'button[name="action"][value="{action}"]', "the page after answering")

    def finish(self) -> CallState | None:
        if self.attack.flow == "probe":
            who = self.starter
            text = who.page.locator("body").inner_text()
            if self.attack.says not in text:
                self.problems.append(f"the start page does not say {self.attack.says!r}")
            return None
        state = settle(self.db, self.conn, self.attack.settle)
        if state is None:
            self.problems.append("no call was started")
            return None
        if state.in_flight:
            self.problems.append(f"the call was left in flight: {state}")
        elif state.status not in self.attack.ends:
            self.problems.append(
                f"the call ended {state.status!r}, not {self.attack.ends}: {state}"[:400]
            )
        if "Traceback" in state.error:
            self.problems.append(f"the call's error is a traceback: {state.error[:300]}")
        who = self.starter
        self.goto(who, f"/calls/{state.call_id}/", "the call page")
        text = who.page.locator("body").inner_text()
        if self.attack.says and self.attack.says not in text:
            self.problems.append(f"the call page does not say {self.attack.says!r}: {text[:600]!r}")
        return state

    def look_around(self, state: CallState | None) -> None:
        person, operator, admin = self.people
        self.goto(person, "/inbox/", "the inbox")
        if self.attack.flow == "round" or self.attack.tool != "attack":
            # The list shows the tool's name and the round's state; elsewhere it adds nothing.
            self.goto(person, "/calls/", "the call list")
        if state is not None:
            self.goto(admin, f"/dashboard/calls/{state.call_id}/audit/", "the audit trail")
        if self.attack.operator:
            for path, where in (
                ("/operators/", "the console"),
                (f"/operators/{self.conn}/catalog/", "the console's catalog"),
                (f"/operators/{self.conn}/exposure/", "the exposure page"),
                (f"/operators/{self.conn}/edit/", "the connection form"),
            ):
                self.goto(operator, path, where)
            self.register_and_test()
            if state is not None:
                self.goto(admin, f"/admin/calls/call/{state.call_id}/change/", "the admin's call")
                self.goto(admin, "/dashboard/rounds/", "the dashboard's rounds")

    def register_and_test(self) -> None:
        """The operator adds the attack's server through the console's form and tests it."""
        operator = self.people[1]
        page = operator.page
        self.goto(operator, "/operators/new/", "the new connection form")
        page.fill('input[name="name"]', f"{self.conn}-again"[:64])
        page.fill('input[name="url"]', f"{self.peer.base_url}/a/{self.attack.slug}/mcp")
        page.check('input[name="auth"][value="header"]')
        page.fill('input[name="bearer_token"]', TOKEN_SECRET)
        self.click(operator, 'form:has(input[name="url"]) button[type="submit"]', "the new one")
        page.get_by_role("button", name="Test connection").click()
        page.locator("#test-result *").first.wait_for()
        operator.inspect("the connection test")

    # -- what every attack must hold ---------------------------------------------------------

    def round_page_checks(self) -> None:
        check = ROUND_CHECKS.get(self.attack.slug)
        if check is not None:
            check(self)

    def canary_hits(self) -> list[str]:
        hits = httpx.get(f"{self.peer.base_url}/_hostile/hits", timeout=5).json()
        prefix = f"/canary/{self.attack.slug}/"
        return [f"{hit['method']} {hit['path']}" for hit in hits if hit["path"].startswith(prefix)]

    def verdict(self, pinger: Pinger) -> list[str]:
        problems = list(self.problems)
        for who in self.people:
            problems += who.problems
        problems += [f"the canary was fetched: {hit}" for hit in self.canary_hits()]
        problems += pinger.failures[:3]
        if pinger.slowest > SLOWEST_PING:
            problems.append(f"/healthz took {pinger.slowest:.1f}s during the attack")
        self.app.check_alive()
        rss = rss_mb(self.app.processes["web"].pid)
        if rss > MAX_RSS_MB:
            problems.append(f"the web process holds {rss:.0f} MB")
        return problems


# -- checks of particular attacks ------------------------------------------------------------


def _lookalike_warned(visit: Visit) -> None:
    text = visit.starter.page.locator("body").inner_text()
    for warning in ("hides its real host", "non-ASCII", "encoded international name"):
        if warning not in text:
            visit.problems.append(f"the round page does not warn {warning!r}")


def _spoofed_urls_blocked(visit: Visit) -> None:
    page = visit.starter.page
    # Only the numeric host (an IP address, with a warning) may be offered at all.
    if page.locator('button[name="consent"]').count() > 1:
        visit.problems.append("a URL with hidden characters or a disguised host can be opened")


ROUND_CHECKS = {
    "url-lookalike": _lookalike_warned,
    "url-spoof-characters": _spoofed_urls_blocked,
}


def _email_of_round(visit: Visit, since: int) -> None:
    """The round's email reached the person, with no header a server's text made up (its
    body may quote that text: only the headers matter)."""
    log = visit.app.log("web")[since:]
    if "could not email round" in log or "BadHeaderError" in log:
        visit.problems.append("the round's email was lost to a bad header")
    # The console backend writes each message whole, then a line of 79 dashes.
    sent = [chunk for chunk in log.split("-" * 79) if f"To: {PERSON_EMAIL}" in chunk]
    if not sent:
        visit.problems.append("no email told the person about the round")
    for chunk in sent:
        message = email.message_from_string(chunk[chunk.find("Content-Type:") :])
        for name in ("Bcc", "X-Injected"):
            if message[name] is not None:
                visit.problems.append(f"a {name} header was injected: {message[name]!r}")
        if len(message.get_all("Subject") or []) != 1:
            visit.problems.append(f"the email has subjects {message.get_all('Subject')}")


def _mcp_name_encoded(visit: Visit) -> None:
    seen = httpx.get(f"{visit.peer.base_url}/_hostile/seen/{visit.attack.slug}", timeout=5).json()
    names = [
        value
        for entry in seen
        if entry["rpc_method"] == "tools/call"
        for name, value in entry["headers"]
        if name == "mcp-name"
    ]
    if not names or not all(value.startswith("=?base64?") for value in names):
        visit.problems.append(f"Mcp-Name was not sent base64-encoded: {names}")


@pytest.mark.parametrize("attack", _params())
def test_attack_held(
    attack: Attack,
    hostile_app: LiveApp,
    hostile_peer: Peer,
    person: Tripwires,
    operator: Tripwires,
    admin: Tripwires,
    record_property: Any,
) -> None:
    visit = Visit(attack, hostile_app, hostile_peer, person, operator, admin)
    log_mark = len(hostile_app.log("web"))
    with Pinger(hostile_app.base_url) as pinger:
        visit.start()
        if attack.flow == "round":
            visit.answer()
        state = visit.finish()
        visit.look_around(state)
    if attack.slug == "header-injection":
        _mcp_name_encoded(visit)
        _email_of_round(visit, log_mark)
    problems = visit.verdict(pinger)
    record_property("slowest_ping", pinger.slowest)
    record_property("rss_mb", rss_mb(hostile_app.processes["web"].pid))
    assert not problems, (
        f"{attack.slug} ({attack.summary}) was not held:\n- "
        + "\n- ".join(problems)
        + f"\n(pages: {', '.join(visit.timings)})"
    )


# -- the tripwires themselves fire ------------------------------------------------------------
# Without this, an attack could pass because a tripwire never looks.

BREACHED = """
<p>{secret}</p>
<b data-pwn="x">injected</b>
<img src="http://127.0.0.1:9/canary/self-test.png" onerror="window.__pwned='img'">
<a href="javascript:void(0)">js</a>
<iframe srcdoc="<p>x</p>"></iframe>
<form action="http://127.0.0.1:9/steal"><input type="password" name="pw"></form>
<script>window.__pwned = 'script'; alert('pwned');</script>
<p>Server: <strong>\u202eevil</strong> at <span>https://example.org</span></p>
"""


def test_each_tripwire_fires(browser: Any, hostile_app: LiveApp) -> None:
    page = _new_page(browser, hostile_app)
    try:
        wires = Tripwires(page=page, origin=hostile_app.base_url, secrets=SECRETS)
        # On about:blank, where no Content-Security-Policy stops the inline script: the
        # tripwires must catch a script that runs, not rely on the app's policy.
        page.set_content(BREACHED.format(secret=SECRETS[0]))
        wires.inspect("a breached page")
        found = "\n".join(wires.problems)
        for expected in (
            "dialog opened",
            "injected script ran",
            "an element injected from server text",
            "an on* event handler attribute",
            "a link that is not http(s)",
            "a frame, embed, base or refresh element",
            "a password field",
            "a form posting off-site",
            "the page shows the secret",
            "text reordered by a server's bidi controls",
            "the browser requested http://127.0.0.1:9/canary/self-test.png",
        ):
            assert expected in found, f"{expected!r} was not caught; caught:\n{found}"
        wires.reset()
        assert wires.problems == []
    finally:
        page.context.close()
