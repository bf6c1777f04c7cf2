"""The hostile-server corpus against the real pages: its own app, server, people and browser pages.

Package-scoped, so the attacks share one app process, one hostile server and one signed-in
page per person (signing in and starting processes are the slow parts):

- ``hostile_peer`` (tests/peers/fixtures.py): every attack on an endpoint of its own;
- ``hostile_app``: the app as ``make run`` serves it (like ``live_app`` in the parent
  conftest, but its own process, so nothing an attack leaves behind reaches other tests), with
  one connection per attack (a bearer token and a header that are secrets, the attack's tool
  exposed to end users), and three people: PERSON (an end user, with an email address, so
  rounds are emailed; the console email backend writes them to the web log), OPERATOR and ADMIN;
- ``person``, ``operator``, ``admin``: a page signed in as each, with :class:`Tripwires`.

The session's summary prints ``attacks held: N/M`` (:func:`pytest_terminal_summary`); an
attack counts as held only when its test passed (an xfail is not held).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import LiveApp, _new_page, _start_web, sign_in
from tests.browser.hostile.tripwires import Tripwires
from tests.peers._hostile_corpus import ATTACKS, SECRET
from tests.peers.fixtures import Peer
from tests.support.processes import app_environment, wait_until_served

PERSON = ("hazel", "hazel-hostile-pw-1")
PERSON_EMAIL = "hazel@example.test"
OPERATOR = ("otto", "otto-hostile-pw-1")
ADMIN = ("ada", "ada-hostile-pw-1")
# Credentials of every connection: sent to the server, never shown in a page.
TOKEN_SECRET = "hostile-connection-token-7d1f"
HEADER_SECRET = "hostile-header-secret-93ab"
SECRETS = (SECRET, TOKEN_SECRET, HEADER_SECRET)

# Where the app asks operators and admins for a second factor, they get the harness's
# authenticator, whose code sign_in enters (tests/support/second_factor.py, where it exists).
try:
    from tests.support.second_factor import ENROL
except ImportError:  # an app without two-step sign-in
    ENROL = "def enrol(user):\n    return None\n"

_SETUP = """
import json
from django.core.management import call_command
# One Django process for all of it: each manage.py start costs seconds on a busy machine.
call_command("migrate", interactive=False, verbosity=0)
call_command("collectstatic", interactive=False, verbosity=0)
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.utils import timezone
from mrtrweb.servers.models import Connection, ToolExposure
User = get_user_model()
person = User.objects.create_user({person!r}, email={email!r}, password={person_pw!r})
person.groups.add(Group.objects.get(name="End users"))
operator = User.objects.create_user({operator!r}, password={operator_pw!r})
operator.groups.add(Group.objects.get(name="Operators"))
enrol(operator)
enrol(User.objects.create_superuser({admin!r}, email="", password={admin_pw!r}))
fields = {{f.name for f in Connection._meta.get_fields()}}
for spec in json.loads({connections!r}):
    extra = {{k: v for k, v in spec["fields"].items() if k in fields}}
    # Tested by an operator, as every connection end users are offered must be; a static
    # token, so a 401 is the server refusing it (not a person to send to an OAuth server).
    connection = Connection.objects.create(
        name=spec["name"], url=spec["url"], bearer_token={token!r},
        headers={{"X-Api-Key": {header!r}}}, tested_at=timezone.now(),
        **{{"auth": "header", **extra}},
    )
    ToolExposure.objects.create(connection=connection, tool_name=spec["tool"], exposed=True)
"""


def connection_name(slug: str) -> str:
    return f"h-{slug}"[:64]


@pytest.fixture(scope="package")
def hostile_app(hostile_peer: Peer) -> Iterator[LiveApp]:
    root = Path(tempfile.mkdtemp(prefix="mrtrweb-hostile-"))
    app = LiveApp(
        root=root,
        env=app_environment(
            root, DJANGO_EMAIL_BACKEND="django.core.mail.backends.console.EmailBackend"
        ),
    )
    try:
        app.pick_port()
        app.env["MRTRWEB_BASE_URL"] = app.base_url
        connections = [
            {
                "name": connection_name(attack.slug),
                "url": f"{hostile_peer.base_url}/a/{attack.slug}/mcp",
                "tool": attack.tool,
                "fields": attack.connection,
            }
            for attack in ATTACKS
        ]
        app.shell(
            timeout=180,
            code=ENROL
            + _SETUP.format(
                person=PERSON[0],
                email=PERSON_EMAIL,
                person_pw=PERSON[1],
                operator=OPERATOR[0],
                operator_pw=OPERATOR[1],
                admin=ADMIN[0],
                admin_pw=ADMIN[1],
                connections=json.dumps(connections),
                token=TOKEN_SECRET,
                header=HEADER_SECRET,
            ),
        )
        _start_web(app)
        wait_until_served(app)
        yield app
    finally:
        app.stop()
        shutil.rmtree(root, ignore_errors=True)


def _signed_in(browser: Any, app: LiveApp, who: tuple[str, str]) -> Iterator[Tripwires]:
    page = _new_page(browser, app)
    try:
        sign_in(page, *who)
        yield Tripwires(page=page, origin=app.base_url, secrets=SECRETS)
    finally:
        page.context.close()


@pytest.fixture(scope="package")
def person(browser: Any, hostile_app: LiveApp) -> Iterator[Tripwires]:
    yield from _signed_in(browser, hostile_app, PERSON)


@pytest.fixture(scope="package")
def operator(browser: Any, hostile_app: LiveApp) -> Iterator[Tripwires]:
    yield from _signed_in(browser, hostile_app, OPERATOR)


@pytest.fixture(scope="package")
def admin(browser: Any, hostile_app: LiveApp) -> Iterator[Tripwires]:
    yield from _signed_in(browser, hostile_app, ADMIN)


# -- diagnostics and the summary -------------------------------------------------------------


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """On failure, what each person's page showed, and the tail of the web log."""
    report = yield
    if not report.failed or report.when != "call":
        return report
    funcargs = getattr(item, "funcargs", {})
    for who in ("person", "operator", "admin"):
        wires = funcargs.get(who)
        if isinstance(wires, Tripwires):
            try:
                text = wires.page.locator("body").inner_text(timeout=2000)
            except Exception as exc:  # the page may be gone; the failure itself matters more
                text = f"(not readable: {exc})"
            report.sections.append((f"{who}'s page at failure: {wires.page.url}", text[:3000]))
    app = funcargs.get("hostile_app")
    if isinstance(app, LiveApp):
        report.sections.append(("mrtrweb web log (tail)", app.log("web")[-4000:]))
    return report


_OUTCOMES: dict[str, tuple[str, str]] = {}
# The web process's largest resident memory after an attack, and its slowest /healthz.
_PEAKS = {"rss_mb": 0.0, "slowest_ping": 0.0}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if "test_hostile.py::test_attack_held[" not in report.nodeid:
        return
    slug = report.nodeid.rsplit("[", 1)[1].rstrip("]")
    for name, value in report.user_properties:
        if name in _PEAKS:
            _PEAKS[name] = max(_PEAKS[name], float(value))
    if report.when == "call" or (report.when == "setup" and not report.passed):
        if hasattr(report, "wasxfail"):
            _OUTCOMES[slug] = ("xfail", str(report.wasxfail))
        elif report.passed:
            _OUTCOMES[slug] = ("held", "")
        elif report.skipped:
            _OUTCOMES[slug] = ("skipped", "")
        else:
            crash = getattr(report.longrepr, "reprcrash", None)
            first = (crash.message if crash else str(report.longrepr)).splitlines()
            _OUTCOMES[slug] = ("failed", " / ".join(first[:3])[:300])


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not _OUTCOMES:
        return
    held = sum(1 for outcome, _ in _OUTCOMES.values() if outcome == "held")
    write = terminalreporter.write_line
    terminalreporter.section("hostile server")
    for slug, (outcome, why) in sorted(_OUTCOMES.items()):
        if outcome != "held":
            write(f"not held: {slug} ({outcome}{': ' + why if why else ''})")
    write(
        f"web process: at most {_PEAKS['rss_mb']:.0f} MB resident after an attack; "
        f"/healthz answered within {_PEAKS['slowest_ping']:.2f} s all along"
    )
    write(f"attacks held: {held}/{len(_OUTCOMES)}")
