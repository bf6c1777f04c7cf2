"""The app as a person meets it: real processes, a real browser.

Package-scoped, so the browser tests share one app and one Chromium and nothing outlives them:

- ``live_app``: a fresh SQLite database and ``var/`` in a temp dir, ``migrate`` and
  ``collectstatic`` run there, two accounts, then ``uvicorn mrtrweb.asgi:application`` on a free
  127.0.0.1 port, as ``make run`` does (``DJANGO_DEBUG=0``, so WhiteNoise serves the collected,
  hashed files). As in ``make run`` without Redis, the web process runs the tasks itself
  (``MRTRWEB_INPROCESS_WORKER``, mrtrweb/live/worker.py), so the events raised while delivering
  reach the browsers' sockets through the in-memory channel layer.
- ``peer_connection`` / ``short_ttl_connection``: the ``fastmcp_process_peer`` /
  ``short_ttl_process_peer`` servers (tests/peers; the app runs in a process of its own, so
  they do too) registered as connections with ``manage.py mcp_server add``.
- ``slow_connection``: the ``flaky`` fault peer (the SDK peer behind a front that can hold
  resubmissions back, ``slow_peer.slow_down(seconds)``), for a server slower than the answer
  page waits (``MRTRWEB_ANSWER_WAIT``), so the call page shows "Delivering your answers…".
- ``browser``: Debian's Chromium driven by Playwright (never a downloaded browser).
- ``page`` (function): a fresh 1200x800 context; ``signed_in_page``: the same, with the cookies
  of PERSON, who signed in once through the login page (``person_session``).
- ``live_app.worker_stopped()``: a context manager that holds deliveries back (it restarts the
  web process without its task worker and without delivering answers itself, then as before).

The processes are started, awaited and stopped with tests/support/processes.py.

Helpers: :func:`assert_accessible` (axe-core), :func:`shoot` (screenshots for the user guide
when ``MRTRWEB_SCREENSHOTS`` names a folder).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.peers.fixtures import Peer
from tests.support import second_factor
from tests.support.processes import (
    ServedApp,
    app_environment,
    start_uvicorn,
    stop,
    wait_until_served,
)

try:
    from playwright.sync_api import expect
except ImportError:  # the `browser` fixture fails every test with the reason and the fix
    expect = None  # type: ignore[assignment]

REPO_ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path(os.environ.get("MRTRWEB_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    # We run as root in a container without user namespaces.
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    # The network is closed: no update checks, no sync, no first-run fetches.
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]
AXE_JS = REPO_ROOT / "var" / "node" / "node_modules" / "axe-core" / "axe.min.js"
VIEWPORT = {"width": 1200, "height": 800}

# The person who starts and answers calls: an ordinary account, not staff.
PERSON = ("alice", "alice-browser-pw-1")
ADMIN = ("admin", "admin-browser-pw-1")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "browser: drives the running app with Chromium (tests/browser)"
    )


# -- the app under test ------------------------------------------------------------------------


class LiveApp(ServedApp):
    @contextlib.contextmanager
    def worker_stopped(self) -> Iterator[None]:
        """No deliveries for a while: answers stay queued until the worker is back.

        The web process sends an answer itself (``MRTRWEB_DELIVER_ON_ANSWER``) and its task
        worker sends the rest, so it is restarted gracefully without both (never frozen: a
        frozen process could hold SQLite's write lock): answers then wait as tasks, which the
        worker runs once it is back. Pages open meanwhile reconnect their sockets by themselves."""
        _restart_web(self, inprocess_worker=False)
        try:
            yield
        finally:
            _restart_web(self, inprocess_worker=True)


def _start_web(app: LiveApp, *, inprocess_worker: bool = True) -> None:
    # As `make run` serves it: the lifespan starts the in-process task worker (answers queued
    # in this process wake it at once; it polls for others a little faster than by default),
    # and the process that takes an answer sends it itself.
    app.env["MRTRWEB_INPROCESS_WORKER"] = "1" if inprocess_worker else "0"
    app.env["MRTRWEB_DELIVER_ON_ANSWER"] = "1" if inprocess_worker else "0"
    app.env["MRTRWEB_INPROCESS_WORKER_INTERVAL"] = "0.2"
    start_uvicorn(app, port=app.port, lifespan=True)


def _restart_web(app: LiveApp, *, inprocess_worker: bool) -> None:
    stop(app.processes["web"])
    _start_web(app, inprocess_worker=inprocess_worker)
    wait_until_served(app)


# Both must pass two-step sign-in: they use the harness's authenticator (sign_in types its code).
_CREATE_USERS = (
    second_factor.ENROL
    + """
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
User = get_user_model()
person = User.objects.create_user({person!r}, password={person_pw!r})
# The rounds tests start calls on every tool of the test peers, which nobody exposed:
# operators see the whole catalog. (End users' own walk-throughs expose tools first.)
person.groups.add(Group.objects.get(name="Operators"))
enrol(person)
enrol(User.objects.create_superuser({admin!r}, email="", password={admin_pw!r}))
"""
)


@pytest.fixture(scope="package")
def live_app() -> Iterator[LiveApp]:
    root = Path(tempfile.mkdtemp(prefix="mrtrweb-browser-"))
    # The browser's requests come from 127.0.0.1, trusted as a proxy here so that a test may
    # claim an address of its own (X-Forwarded-For) and lock only that one out.
    env = app_environment(root, MRTRWEB_TRUSTED_PROXIES="127.0.0.1")
    app = LiveApp(root=root, env=env)
    try:
        app.migrate()
        app.shell(
            _CREATE_USERS.format(
                person=PERSON[0],
                person_pw=PERSON[1],
                admin=ADMIN[0],
                admin_pw=ADMIN[1],
            )
        )
        app.pick_port()
        # Links in emails, the OAuth redirect URI and client ID are built from it.
        app.env["MRTRWEB_BASE_URL"] = app.base_url
        _start_web(app)
        wait_until_served(app)
        yield app
    finally:
        app.stop()
        shutil.rmtree(root, ignore_errors=True)


def _register(app: LiveApp, name: str, peer: Peer) -> str:
    app.manage("mcp_server", "add", "--name", name, "--url", peer.url)
    return name


@pytest.fixture(scope="package")
def peer_connection(live_app: LiveApp, fastmcp_process_peer: Peer) -> str:
    """The name of the connection to the fastmcp peer (state lifetime 600 s)."""
    return _register(live_app, "peer", fastmcp_process_peer)


@pytest.fixture(scope="package")
def short_ttl_connection(live_app: LiveApp, short_ttl_process_peer: Peer) -> str:
    """The name of the connection to the fastmcp peer whose state expires after 2 s."""
    return _register(live_app, "short", short_ttl_process_peer)


class SlowPeer:
    """The ``flaky`` fault peer (tests/peers/faults.py): the SDK peer, whose resubmissions
    can be held back on demand; ``recorded`` lists only the requests it really handled."""

    def __init__(self, peer: Peer) -> None:
        self.peer = peer

    def slow_down(self, seconds: float) -> None:
        """The next resubmission (a round's answers) waits ``seconds`` before it is handled."""
        plan = {"fault": "slow", "times": 1, "delay": seconds}
        httpx.post(f"{self.peer.base_url}/_peer/fault", json=plan, timeout=5.0).raise_for_status()

    def resubmissions(self, since: int) -> list[dict[str, Any]]:
        """The resubmissions the server handled after ``since`` (a ``mark()``)."""
        return [
            entry
            for entry in self.peer.recorded(since=since)
            if "inputResponses" in (((entry.get("json") or {}).get("params")) or {})
        ]

    def mark(self) -> int:
        return self.peer.mark()


@pytest.fixture(scope="package")
def slow_peer(fault_peer: Any) -> Iterator[SlowPeer]:
    slow = SlowPeer(fault_peer("flaky"))
    yield slow
    # Nothing held back for whoever uses the same session-wide peer next.
    httpx.post(f"{slow.peer.base_url}/_peer/fault", json={"fault": None}, timeout=5.0)


@pytest.fixture(scope="package")
def slow_connection(live_app: LiveApp, slow_peer: SlowPeer) -> str:
    """The name of the connection to the peer that can answer slowly (``slow_peer``)."""
    return _register(live_app, "slow", slow_peer.peer)


# -- the browser -------------------------------------------------------------------------------


@pytest.fixture(scope="package")
def browser() -> Iterator[Any]:
    # Missing tools fail the tests (never skip them): CI must not go green without a browser.
    _axe_path()
    if not CHROMIUM.exists():
        pytest.fail(
            f"Chromium is missing at {CHROMIUM}. Install Debian's package: "
            "`apt-get install -y chromium` (.ci/run does this before `make test`).",
            pytrace=False,
        )
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail(
            "The `playwright` Python package is missing: `make test` installs it with the "
            'test extra (`pip install -e ".[dev]"`). Never `playwright install`: the tests '
            "drive Debian's Chromium.",
            pytrace=False,
        )
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


def _new_page(browser: Any, app: LiveApp, storage_state: Any = None, **options: Any) -> Any:
    context = browser.new_context(
        base_url=app.base_url, viewport=VIEWPORT, storage_state=storage_state, **options
    )
    context.set_default_timeout(15_000)
    CspWatch.attach(context)
    return context.new_page()


def _close(page: Any) -> None:
    """Close the page's context, then fail if any of its pages broke the CSP."""
    watch = CspWatch.of(page.context)
    page.context.close()
    watch.assert_none()


@pytest.fixture
def page(browser: Any, live_app: LiveApp) -> Iterator[Any]:
    """A fresh browser context, signed in as nobody."""
    fresh = _new_page(browser, live_app)
    try:
        yield fresh
    finally:
        _close(fresh)


def sign_in(page: Any, username: str, password: str, next_path: str = "/") -> None:
    """Sign in through the login page, as a person would (with the harness authenticator's
    code when the code page asks for one)."""
    page.goto(f"/accounts/login/?next={next_path}")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.wait_for_load_state()
    second_factor.pass_code_page_in_browser(page)
    assert "/login/" not in page.url, f"still on the login page: {page.url}"


@pytest.fixture(scope="package")
def person_session(browser: Any, live_app: LiveApp) -> dict[str, Any]:
    """PERSON's cookies after signing in once through the login page (password hashing is
    slow on purpose, so the tests share one sign-in)."""
    first = _new_page(browser, live_app)
    try:
        sign_in(first, *PERSON)
        return first.context.storage_state()
    finally:
        first.context.close()


@pytest.fixture
def signed_in_page(
    browser: Any, live_app: LiveApp, person_session: dict[str, Any]
) -> Iterator[Any]:
    """A fresh browser context, signed in as PERSON."""
    fresh = _new_page(browser, live_app, storage_state=person_session)
    try:
        yield fresh
    finally:
        _close(fresh)


# -- checks and pictures -----------------------------------------------------------------------

# Every page of a watched context reports what the Content-Security-Policy refused, from the
# page itself (the securitypolicyviolation event) and from Chromium's console ("Refused to ...
# because it violates the following Content Security Policy directive"); the console also
# says when the Permissions-Policy header has a feature Chromium does not know.
_CSP_LISTENER = """
document.addEventListener("securitypolicyviolation", (event) => {
  window.__mrtrwebCspViolation({
    page: document.location.href,
    directive: event.effectiveDirective,
    blocked: event.blockedURI,
    source: event.sourceFile + ":" + event.lineNumber,
    sample: event.sample,
  });
});
"""


_HEADER_COMPLAINTS = ("Content Security Policy", "Permissions-Policy")


class CspWatch:
    """What the CSP refused on the pages of one browser context."""

    def __init__(self) -> None:
        self.violations: list[str] = []

    @classmethod
    def attach(cls, context: Any) -> CspWatch:
        watch = cls()
        context.expose_binding(
            "__mrtrwebCspViolation", lambda _source, seen: watch.violations.append(str(seen))
        )
        context.add_init_script(_CSP_LISTENER)
        context.on("console", watch._console)
        context._mrtrweb_csp_watch = watch
        return watch

    @staticmethod
    def of(context: Any) -> CspWatch:
        return context._mrtrweb_csp_watch

    def _console(self, message: Any) -> None:
        if any(phrase in message.text for phrase in _HEADER_COMPLAINTS):
            self.violations.append(f"console: {message.text}")

    def assert_none(self) -> None:
        assert not self.violations, "the Content-Security-Policy refused:\n" + "\n".join(
            self.violations
        )


def assert_no_csp_violations(page: Any) -> None:
    """Nothing on this page's context was refused by the CSP so far (waits for the reports a
    moment: they arrive as events after the fact)."""
    page.wait_for_timeout(100)
    CspWatch.of(page.context).assert_none()


def _axe_path() -> Path:
    if not AXE_JS.exists():
        pytest.fail(
            f"axe-core is missing at {AXE_JS}. `make test` installs it into var/node "
            "(`npm install --prefix var/node axe-core@4`).",
            pytrace=False,
        )
    return AXE_JS


def format_violations(violations: list[dict[str, Any]]) -> str:
    lines = []
    for v in violations:
        lines.append(f"- {v['id']} ({v.get('impact')}): {v['help']} <{v.get('helpUrl', '')}>")
        for node in v.get("nodes", []):
            lines.append(f"    at {', '.join(map(str, node.get('target', [])))}")
            lines.append(f"       {node.get('html', '')[:200]}")
            for summary_line in (node.get("failureSummary") or "").splitlines():
                lines.append(f"       {summary_line}")
    return "\n".join(lines)


def axe_violations(page: Any) -> list[dict[str, Any]]:
    """What axe-core (WCAG 2.x A/AA and best practices) finds wrong with the page as shown."""
    # Evaluated rather than added as a <script> element, which the CSP refuses as inline.
    source = _axe_path().read_text(encoding="utf-8")
    for attempt in range(3):
        try:
            page.evaluate(source)
            return list(page.evaluate("axe.run(document)")["violations"])
        except Exception as exc:
            # A page that reloads itself (the call page while delivering) can navigate away
            # under axe; run it again on the new document.
            if "context was destroyed" not in str(exc) or attempt == 2:
                raise
            page.wait_for_load_state()
    raise AssertionError("unreachable")


def assert_accessible(page: Any) -> None:
    violations = axe_violations(page)
    assert not violations, (
        f"axe-core found {len(violations)} violation(s) on {page.url}:\n"
        + format_violations(violations)
    )


def shoot(page: Any, name: str, at: Any = None) -> None:
    """Save a screenshot of the viewport for the user guide, when asked to.

    ``MRTRWEB_SCREENSHOTS`` names the folder (relative to the repo root, e.g. ``docs/images``).
    The page is shown from its top, or with the element ``at`` (a locator) at the top.
    """
    folder = os.environ.get("MRTRWEB_SCREENSHOTS", "").strip()
    if not folder:
        return
    target = Path(folder)
    if not target.is_absolute():
        target = REPO_ROOT / target
    target.mkdir(parents=True, exist_ok=True)
    # No caret or focus ring from the last field typed into.
    page.evaluate("document.activeElement && document.activeElement.blur()")
    if at is None:
        page.evaluate("window.scrollTo(0, 0)")
    else:
        at.evaluate("element => element.scrollIntoView({block: 'start'})")
    page.screenshot(path=str(target / f"{name}.png"))


# -- diagnostics -------------------------------------------------------------------------------


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if not report.failed:
        return report
    funcargs = getattr(item, "funcargs", {})
    page = funcargs.get("page")
    if page is not None and report.when == "call":
        try:
            text = page.locator("body").inner_text(timeout=2000)
            report.sections.append((f"the page at failure: {page.url}", text[:4000]))
        except Exception as exc:  # the page may be gone; the failure itself matters more
            report.sections.append(("the page at failure", f"(not readable: {exc})"))
    app = funcargs.get("live_app")
    if isinstance(app, LiveApp):
        for name in app.processes:
            report.sections.append((f"mrtrweb {name} log (tail)", app.log(name)[-6000:]))
    return report


# -- the roles' walk-throughs (test_roles.py) --------------------------------------------------

# Each role as its own account; "Approvers" is an ordinary group that answers deploy approvals.
OPERATOR = ("olga", "olga-browser-pw-1")
ROLE_ADMIN = ("adam", "adam-browser-pw-1")
APPROVER_1 = ("ann", "ann-browser-pw-1")
APPROVER_2 = ("bob", "bob-browser-pw-1")
END_USER = ("eve", "eve-browser-pw-1")
APPROVERS = "Approvers"

# The operator and the admin use the harness's authenticator (two-step sign-in).
_CREATE_ROLE_USERS = (
    second_factor.ENROL
    + """
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
User = get_user_model()
approvers, _ = Group.objects.get_or_create(name={approvers!r})
def person(username, password, *groups):
    user = User.objects.create_user(username, password=password)
    user.groups.add(*[Group.objects.get(name=name) for name in groups])
    return user
enrol(person({operator!r}, {operator_pw!r}, "Operators"))
enrol(person({admin!r}, {admin_pw!r}, "Admins"))
person({one!r}, {one_pw!r}, "End users", {approvers!r})
person({two!r}, {two_pw!r}, "End users", {approvers!r})
person({end_user!r}, {end_user_pw!r}, "End users")
"""
)


@pytest.fixture(scope="package")
def role_people(live_app: LiveApp) -> dict[str, tuple[str, str]]:
    """An operator, an admin (group "Admins", not a superuser), two members of "Approvers"
    and an end user who is in no other group."""
    live_app.shell(
        _CREATE_ROLE_USERS.format(
            approvers=APPROVERS,
            operator=OPERATOR[0],
            operator_pw=OPERATOR[1],
            admin=ROLE_ADMIN[0],
            admin_pw=ROLE_ADMIN[1],
            one=APPROVER_1[0],
            one_pw=APPROVER_1[1],
            two=APPROVER_2[0],
            two_pw=APPROVER_2[1],
            end_user=END_USER[0],
            end_user_pw=END_USER[1],
        )
    )
    return {
        "operator": OPERATOR,
        "admin": ROLE_ADMIN,
        "approver_1": APPROVER_1,
        "approver_2": APPROVER_2,
        "end_user": END_USER,
    }


@pytest.fixture
def page_as(
    browser: Any, live_app: LiveApp, role_people: dict[str, tuple[str, str]]
) -> Iterator[Any]:
    """``page_as("operator")``: a fresh browser context signed in through the login page as
    that role's account; every context opened is closed after the test."""
    opened: list[Any] = []

    def open_as(role: str) -> Any:
        fresh = _new_page(browser, live_app)
        opened.append(fresh)
        sign_in(fresh, *role_people[role])
        return fresh

    try:
        yield open_as
    finally:
        for each in opened:
            with contextlib.suppress(Exception):
                each.context.close()
        for each in opened:
            CspWatch.of(each.context).assert_none()
