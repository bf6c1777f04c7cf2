"""Tripwires for the hostile-server tests: what a browser page, the app and the server saw.

- :class:`Tripwires` listens on one Playwright page: dialogs (dismissed and recorded),
  requests to any origin but the app's, navigations away from it, and 5xx answers from the
  app; :meth:`Tripwires.inspect` checks the page as shown: no canary global, no element or
  attribute injected from server text, no link or frame to anything but http(s), no
  password field or off-site form, no text reordered by a server's bidi controls, and no
  secret in the HTML.
- :class:`Pinger` asks the app's ``/healthz`` all along an attack, to prove the web process
  stays responsive; :func:`rss_mb` reads its memory.
- :func:`call_state` reads a call's status (and its rounds') straight from the app's SQLite
  file, read-only, so waiting for a call to settle costs no page load.
"""

from __future__ import annotations

import sqlite3
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

# What an injected script or handler would set (the corpus's markup sets window.__pwned).
_INSPECT_JS = """
() => {
  const out = {pwned: window.__pwned === undefined ? null : String(window.__pwned),
               injected: [], handlers: [], links: [], frames: [], passwords: [], forms: [],
               bidi: []};
  for (const el of document.querySelectorAll('[data-pwn]')) {
    out.injected.push(el.outerHTML.slice(0, 160));
  }
  // The app's own handlers are the CSP work's business; a handler from server text is ours.
  for (const el of document.querySelectorAll('*')) {
    for (const attr of el.attributes) {
      if (/^on/i.test(attr.name) && /pwned/.test(attr.value)) {
        out.handlers.push(el.tagName + ' ' + attr.name);
      }
    }
  }
  for (const a of document.querySelectorAll('a[href], area[href]')) {
    const scheme = a.protocol;
    if (scheme !== 'http:' && scheme !== 'https:') {
      out.links.push(a.getAttribute('href').slice(0, 120));
    }
  }
  const framing = 'iframe, frame, object, embed, base, meta[http-equiv="refresh" i]';
  for (const el of document.querySelectorAll(framing)) {
    out.frames.push(el.outerHTML.slice(0, 160));
  }
  // The console's own secret fields (bearer token, OAuth client secret) are the only
  // password fields a page may have.
  for (const el of document.querySelectorAll('input[type="password" i]')) {
    if (!['bearer_token', 'oauth_client_secret'].includes(el.name)) out.passwords.push(el.name);
  }
  for (const f of document.querySelectorAll('form[action]')) {
    const action = new URL(f.getAttribute('action'), location.href);
    if (action.origin !== location.origin) out.forms.push(action.href);
  }
  // Bidi controls a server sent must not reorder the text after it (a right-to-left override
  // in a name would turn the address shown next to it around). For each text node holding
  // one, a word in a later text node of the same block must still run left to right.
  const controls = /[\u202a-\u202e\u2066-\u2069]/;
  const texts = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const holders = [];
  for (let node = texts.nextNode(); node; node = texts.nextNode()) {
    if (controls.test(node.data)) holders.push(node);
  }
  for (const holder of holders) {
    let block = holder.parentElement;
    while (block.parentElement && getComputedStyle(block).display.startsWith('inline')) {
      block = block.parentElement;
    }
    const after = document.createTreeWalker(block, NodeFilter.SHOW_TEXT);
    after.currentNode = holder;
    for (let node = after.nextNode(); node; node = after.nextNode()) {
      const word = /[A-Za-z]{3,}/.exec(node.data);
      if (!word) continue;
      const at = (i) => {
        const range = document.createRange();
        range.setStart(node, i);
        range.setEnd(node, i + 1);
        return range.getBoundingClientRect();
      };
      const first = at(word.index), last = at(word.index + word[0].length - 1);
      if (Math.abs(first.top - last.top) < 2 && first.left > last.left) {
        out.bidi.push(word[0] + ' in ' + block.tagName);
      }
    }
  }
  return out;
}
"""


@dataclass
class Tripwires:
    """Everything one page did that it must not, since the last :meth:`reset`."""

    page: Any
    origin: str
    secrets: tuple[str, ...]
    problems: list[str] = field(default_factory=list)
    pages_seen: int = 0

    def __post_init__(self) -> None:
        self.page.on("dialog", self._dialog)
        self.page.on("request", self._request)
        self.page.on("framenavigated", self._navigated)
        self.page.on("response", self._response)

    def reset(self) -> None:
        self.problems.clear()
        self.pages_seen = 0

    def _dialog(self, dialog: Any) -> None:
        self.problems.append(f"a {dialog.type} dialog opened: {dialog.message[:80]!r}")
        dialog.dismiss()

    def _request(self, request: Any) -> None:
        url = request.url
        if url.startswith(("data:", "blob:", "about:")):
            return
        if _origin(url) != self.origin:
            self.problems.append(f"the browser requested {url[:160]}")

    def _navigated(self, frame: Any) -> None:
        url = frame.url
        if url in ("", "about:blank") or url.startswith("chrome-error:"):
            return
        if _origin(url) != self.origin:
            self.problems.append(f"a frame navigated away to {url[:160]}")

    def _response(self, response: Any) -> None:
        if response.status >= 500 and _origin(response.url) == self.origin:
            self.problems.append(f"HTTP {response.status} from {response.url}")

    def inspect(self, where: str) -> None:
        """Check the page as it is now; ``where`` names it in the problems found."""
        self.pages_seen += 1
        try:
            found = self.page.evaluate(_INSPECT_JS)
            html = self.page.content()
        except Exception as exc:  # a page that navigates under us is inspected again later
            if "context was destroyed" in str(exc) or "navigating" in str(exc):
                self.page.wait_for_load_state()
                found = self.page.evaluate(_INSPECT_JS)
                html = self.page.content()
            else:
                raise
        at = f"{where} ({self.page.url})"
        if found["pwned"] is not None:
            self.problems.append(f"{at}: injected script ran (window.__pwned={found['pwned']})")
        for key, what in (
            ("injected", "an element injected from server text"),
            ("handlers", "an on* event handler attribute"),
            ("links", "a link that is not http(s)"),
            ("frames", "a frame, embed, base or refresh element"),
            ("passwords", "a password field"),
            ("forms", "a form posting off-site"),
            ("bidi", "text reordered by a server's bidi controls"),
        ):
            for item in found[key]:
                self.problems.append(f"{at}: {what}: {item}")
        for secret in self.secrets:
            if secret in html:
                self.problems.append(f"{at}: the page shows the secret {secret[:24]}…")


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


class Pinger:
    """Asks ``/healthz`` every quarter second on a thread; the slowest answer and failures."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.slowest = 0.0
        self.failures: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Pinger:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=15)

    def _run(self) -> None:
        # urllib, not httpx: four requests a second would flood the captured httpx log.
        while not self._stop.is_set():
            began = time.monotonic()
            try:
                with urllib.request.urlopen(f"{self.base_url}/healthz", timeout=10.0) as answer:
                    status = answer.status
            except OSError as exc:
                self.failures.append(f"/healthz: {exc}")
            else:
                if status != 200:
                    self.failures.append(f"/healthz answered {status}")
            self.slowest = max(self.slowest, time.monotonic() - began)
            self._stop.wait(0.25)


def rss_mb(pid: int) -> float:
    """The resident memory of process ``pid``, in MB (0 if it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


@dataclass(frozen=True)
class CallState:
    call_id: int
    status: str
    error: str
    rounds: tuple[tuple[int, str], ...]  # (round id, status), oldest first

    @property
    def in_flight(self) -> bool:
        return self.status == "running" or any(
            status in ("submitted", "delivering") for _, status in self.rounds
        )


def call_state(db: Path, connection: str) -> CallState | None:
    """The newest call on ``connection``, or None."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=20) as conn:
        row = conn.execute(
            "SELECT c.id, c.status, c.error FROM calls_call c "
            "JOIN servers_connection s ON s.id = c.connection_id "
            "WHERE s.name = ? ORDER BY c.id DESC LIMIT 1",
            (connection,),
        ).fetchone()
        if row is None:
            return None
        rounds = conn.execute(
            "SELECT id, status FROM calls_round WHERE call_id = ? ORDER BY id", (row[0],)
        ).fetchall()
    return CallState(row[0], row[1], row[2] or "", tuple((r[0], r[1]) for r in rounds))


def settle(db: Path, connection: str, within: float) -> CallState | None:
    """Wait until the newest call on ``connection`` is no longer in flight (or ``within``
    seconds pass); its state then."""
    deadline = time.monotonic() + within
    state = call_state(db, connection)
    while (state is None or state.in_flight) and time.monotonic() < deadline:
        time.sleep(0.2)
        state = call_state(db, connection)
    return state
