"""Every page of the site, on a phone (390 px) and a desktop (1280 px), in English and German.

Each page is opened as the role that uses it (an end user, the person who starts calls, an
operator, an admin, nobody signed in) and checked as a person on that screen meets it:

- nothing scrolls sideways: the document is no wider than the window, and no element reaches
  past its right edge (tables stack, long server text wraps);
- at 390 px every control is at least 24 by 24 CSS pixels, or far enough from the others
  (WCAG 2.2, 2.5.8 target size, with its exception for links inside a sentence);
- axe-core finds nothing wrong.

The walk is the list ``PAGES``; ``test_every_named_page_is_walked`` fails when a named URL
pattern (``mrtrweb/urls.py`` and each app's ``urls.py``) is neither walked nor excluded with
a reason, so a new page cannot be forgotten. German is asked for with the ``django_language``
cookie and ``Accept-Language``; where a string is not translated yet, the page shows English.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from mrtrweb.elicitation import field_name_for
from tests.support import terminal_calls

from .conftest import (
    ADMIN,
    AXE_JS,
    PERSON,
    LiveApp,
    _close,
    _new_page,
    format_violations,
    shoot,
    sign_in,
)

pytestmark = pytest.mark.browser

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 800}
MIN_TARGET = 24  # CSS pixels, WCAG 2.2 2.5.8 (AA)


# -- the pages ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Visit:
    """One page: its URL pattern's name, who opens it, and how (a path, or steps)."""

    name: str
    # "anonymous", "end_user", "person" (starts calls, an operator), "admin", or
    # "signing_in" (nobody yet: a context of its own, left half signed in)
    role: str
    path: Callable[[dict[str, Any]], str]
    then: Callable[[Any], None] | None = None  # steps on the page, e.g. a form posted
    label: str = ""
    status: int = 200  # what the address answers (error pages: their code)

    @property
    def id(self) -> str:
        return f"{self.name}{' ' + self.label if self.label else ''}"


def _post_first(selector: str) -> Callable[[Any], None]:
    def post(page: Any) -> None:
        page.locator(selector).first.click()
        page.wait_for_load_state()

    return post


def _password_given(page: Any) -> None:
    """Sign in as PERSON up to the code page (their account has an authenticator)."""
    page.locator("input[name=username]").fill(PERSON[0])
    page.locator("input[name=password]").fill(PERSON[1])
    page.locator("form button[type=submit]").first.click()
    page.wait_for_url("**/account/two-step/code/**")


def _open_menu(page: Any) -> None:
    """On a phone, the header's Menu button opens the links (no script needed)."""
    summary = page.locator("details.menu > summary")
    if summary.is_visible():
        summary.click()
        if page.viewport_size["width"] < 500 and "en" in (
            page.evaluate("document.documentElement.lang") or ""
        ):
            shoot(page, "phone-menu")


def _shoot_wide(page: Any, name: str) -> None:
    """A guide's picture of this page: once, at 1280 px in English."""
    if page.viewport_size["width"] >= 1000 and "en" in (
        page.evaluate("document.documentElement.lang") or ""
    ):
        shoot(page, name)


PAGES: tuple[Visit, ...] = (
    # Signing in, and out of it.
    Visit("login", "anonymous", lambda s: "/accounts/login/"),
    Visit("password_reset", "anonymous", lambda s: "/accounts/password_reset/"),
    Visit("password_reset_done", "anonymous", lambda s: "/accounts/password_reset/done/"),
    Visit(
        "password_reset_confirm",
        "anonymous",
        lambda s: "/accounts/reset/MQ/not-a-token/",
        label="(a link no longer valid)",
    ),
    Visit("password_reset_complete", "anonymous", lambda s: "/accounts/reset/done/"),
    Visit("core:home", "anonymous", lambda s: "/"),
    # An end user's pages.
    Visit("core:home", "end_user", lambda s: "/"),
    Visit(
        "core:home",
        "end_user",
        lambda s: "/",
        then=_open_menu,
        label="(the menu open)",
    ),
    Visit("inbox:index", "end_user", lambda s: "/inbox/"),
    Visit("inbox:history", "end_user", lambda s: "/inbox/history/"),
    Visit("calls:list", "end_user", lambda s: "/calls/"),
    Visit("starting:pick", "end_user", lambda s: "/calls/start/"),
    Visit("account:settings", "end_user", lambda s: "/account/"),
    Visit("away:away", "end_user", lambda s: "/account/away/"),
    Visit("accounts:two_step", "end_user", lambda s: "/account/two-step/"),
    Visit("accounts:enrol", "end_user", lambda s: "/account/two-step/set-up/"),
    Visit("password_change", "end_user", lambda s: "/accounts/password_change/"),
    Visit("password_change_done", "end_user", lambda s: "/accounts/password_change/done/"),
    Visit("authorizations:accounts", "end_user", lambda s: "/oauth/accounts/"),
    Visit("authorizations:failed", "end_user", lambda s: "/oauth/not-connected/"),
    Visit(
        "authorizations:callback",
        "end_user",
        lambda s: "/oauth/callback/",
        label="(no code: refused)",
        status=400,
    ),
    Visit("error:403", "end_user", lambda s: "/dashboard/rounds/", status=403),
    Visit("error:404", "end_user", lambda s: "/no/such/page/", status=404),
    # The person who starts calls and answers them (an operator too).
    Visit("core:home", "person", lambda s: "/"),
    Visit("inbox:index", "person", lambda s: "/inbox/"),
    Visit("inbox:history", "person", lambda s: "/inbox/history/"),
    Visit("calls:list", "person", lambda s: "/calls/"),
    Visit("calls:call", "person", lambda s: f"/calls/{s['finished_call']}/", label="(answered)"),
    Visit("calls:call", "person", lambda s: f"/calls/{s['waiting_call']}/", label="(waiting)"),
    Visit("calls:call", "person", lambda s: f"/calls/{s['error_call']}/", label="(tool error)"),
    Visit("calls:round", "person", lambda s: f"/rounds/{s['all_kinds_round']}/", label="(kinds)"),
    Visit("calls:round", "person", lambda s: f"/rounds/{s['deploy_round']}/", label="(deploy)"),
    Visit("calls:round", "person", lambda s: f"/rounds/{s['url_round']}/", label="(a page)"),
    Visit("calls:round", "person", lambda s: f"/rounds/{s['answered_round']}/", label="(answered)"),
    Visit("starting:pick", "person", lambda s: "/calls/start/"),
    Visit("starting:start", "person", lambda s: "/calls/start/peer/", label="(catalog)"),
    Visit(
        "starting:start",
        "person",
        lambda s: "/calls/start/peer/?tool=approve_deploy",
        label="(a tool's form)",
    ),
    Visit(
        "starting:start",
        "person",
        lambda s: "/calls/start/peer/?tool=add&json=1",
        label="(arguments as JSON)",
    ),
    Visit(
        "starting:start",
        "person",
        lambda s: "/calls/start/peer/?prompt=greeting_prompt",
        label="(a prompt)",
    ),
    Visit("servers:list", "person", lambda s: "/operators/"),
    Visit("servers:create", "person", lambda s: "/operators/new/"),
    Visit("servers:edit", "person", lambda s: "/operators/peer/edit/"),
    Visit(
        "servers:test",
        "person",
        lambda s: "/operators/peer/edit/",
        then=_post_first("form[action$='/test/'] button[type=submit]"),
    ),
    Visit("servers:catalog", "person", lambda s: "/operators/peer/catalog/"),
    Visit("servers:exposure", "person", lambda s: "/operators/peer/exposure/"),
    Visit(
        "policies:policy",
        "person",
        lambda s: "/operators/peer/policy/?tool=approve_deploy",
        then=lambda page: _shoot_wide(page, "operator-policy"),
    ),
    Visit("authorizations:connection", "person", lambda s: "/oauth/connections/peer/"),
    Visit(
        "authorizations:connect",
        "person",
        lambda s: "/oauth/connect/peer/",
        label="(a server without OAuth: refused)",
        status=502,
    ),
    Visit("tokens:list", "person", lambda s: "/account/tokens/"),
    Visit("api:reference", "person", lambda s: "/api/v1/docs/"),
    Visit("accounts:two_step", "person", lambda s: "/account/two-step/"),
    Visit(
        "accounts:backup_codes",
        "person",
        lambda s: "/account/two-step/",
        then=_post_first("form[action$='/backup-codes/'] button[type=submit]"),
    ),
    Visit("accounts:verify", "signing_in", lambda s: "/accounts/login/", then=_password_given),
    # The admins' dashboard.
    Visit("dashboard:home", "admin", lambda s: "/dashboard/"),
    Visit("dashboard:rounds", "admin", lambda s: "/dashboard/rounds/"),
    Visit(
        "dashboard:bulk",
        "admin",
        lambda s: "/dashboard/rounds/",
        then=_post_first("button[name=one][value^='cancel:']"),
        label="(cancel asks first)",
    ),
    Visit("dashboard:calls", "admin", lambda s: "/dashboard/calls/"),
    Visit(
        "dashboard:call_audit", "admin", lambda s: f"/dashboard/calls/{s['finished_call']}/audit/"
    ),
    Visit("dashboard:people", "admin", lambda s: "/dashboard/people/"),
    Visit("dashboard:invite", "admin", lambda s: "/dashboard/people/invite/"),
    Visit("dashboard:person", "admin", lambda s: f"/dashboard/people/{s['person_pk']}/"),
    Visit("dashboard:groups", "admin", lambda s: "/dashboard/groups/"),
    Visit("dashboard:group", "admin", lambda s: f"/dashboard/groups/{s['group_pk']}/"),
    Visit("calls:list", "admin", lambda s: "/calls/"),
)

# Pictures for docs/user-guide.md ("On a phone"), with MRTRWEB_SCREENSHOTS set.
PHONE_SHOTS = {
    "calls:round (deploy) as person": "phone-round",
    "calls:call (answered) as person": "phone-call",
    "calls:list as person": "phone-calls",
}


# Named patterns that are not pages a person reads, each with the reason.
NOT_PAGES: dict[str, str] = {
    "core:healthz": "a probe's plain text",
    "core:readyz": "a probe's plain text",
    "core:favicon": "the icon (tests/browser/test_site_pages.py)",
    "calls:restart": "POST only: sends to the new call's page",
    "calls:retry": "POST only: sends back to the round or call page",
    "calls:claim": "POST only: sends back to the round page",
    "calls:release": "POST only: sends back to the round page",
    "dashboard:person_active": "POST only: asks first on dashboard:person, then sends back",
    "dashboard:person_link": "POST only: shows the link on dashboard:person",
    "live:next": "an htmx fragment inside the call page",
    "logout": "POST only: sends to the sign-in page",
    "authorizations:client-metadata": "JSON for authorization servers",
    "authorizations:disconnect": "POST only: sends back to the accounts page",
    "authorizations:discover": "POST only: an htmx fragment of authorizations:connection",
    "authorizations:client-token": "POST only: an htmx fragment of authorizations:connection",
    "servers:toggle": "POST only: sends back to servers:list",
    "tokens:revoke": "POST only: asks first (a confirmation page), then sends back to tokens:list",
    "away:end": "POST only: sends back to away:away",
    "tokens:secret": "POST only: sends back to tokens:list",
    "accounts:turn_off": "POST only: sends back to accounts:two_step",
    "api:openapi": "JSON (the reference page renders it)",
    "api:reference_slash": "a redirect to api:reference",
    "api:unknown": "JSON problem for unknown API addresses",
    "oidc_authentication_init": "a redirect to the identity provider",
    "oidc_authentication_callback": "the identity provider's return address (a redirect)",
}
# Whole namespaces that are not the site's own pages.
NOT_PAGES_NAMESPACES: dict[str, str] = {
    "admin": "Django's admin, with its own layout",
}
# The JSON API's operations (django-ninja names them after their functions).
API_OPERATIONS_REASON = "the JSON API (tests/api)"


def _named_patterns() -> set[str]:
    from django.urls import URLPattern, URLResolver, get_resolver

    names: set[str] = set()

    def walk(patterns: list[Any], namespace: str) -> None:
        for entry in patterns:
            if isinstance(entry, URLResolver):
                inner = f"{namespace}{entry.namespace}:" if entry.namespace else namespace
                walk(entry.url_patterns, inner)
            elif isinstance(entry, URLPattern) and entry.name:
                names.add(f"{namespace}{entry.name}")

    walk(get_resolver().url_patterns, "")
    return names


def test_every_named_page_is_walked() -> None:
    walked = {visit.name for visit in PAGES}
    missing = []
    for name in sorted(_named_patterns()):
        namespace = name.split(":", 1)[0] if ":" in name else ""
        if name in walked or name in NOT_PAGES or namespace in NOT_PAGES_NAMESPACES:
            continue
        if namespace == "api":  # every other api: name is an operation of the JSON API
            continue
        missing.append(name)
    assert not missing, (
        "named URL patterns neither in PAGES nor in NOT_PAGES (with a reason): "
        + ", ".join(missing)
    )
    stale = sorted(set(NOT_PAGES) - _named_patterns())
    assert not stale, f"NOT_PAGES names patterns that are gone: {stale}"


# -- what the pages need -----------------------------------------------------------------------


def _start(app: LiveApp, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return terminal_calls.start_call(app, "peer", tool, arguments, user=PERSON[0])


@pytest.fixture(scope="module")
def sessions(
    browser: Any,
    live_app: LiveApp,
    person_session: dict[str, Any],
    role_people: dict[str, tuple[str, str]],
) -> dict[str, Any]:
    """Each role's cookies, signed in once through the sign-in page."""
    states: dict[str, Any] = {"anonymous": None, "signing_in": None, "person": person_session}
    for role, account in (("admin", ADMIN), ("end_user", role_people["end_user"])):
        page = _new_page(browser, live_app)
        try:
            sign_in(page, *account)
            states[role] = page.context.storage_state()
        finally:
            page.context.close()
    return states


@pytest.fixture(scope="module")
def site(
    browser: Any, live_app: LiveApp, peer_connection: str, sessions: dict[str, Any]
) -> dict[str, Any]:
    """Calls in every state the pages show, and the ids their addresses need."""
    deploy = _start(live_app, "approve_deploy", {"service": "checkout-" + "x" * 60})
    all_kinds = _start(live_app, "all_field_kinds", {})
    url = _start(live_app, "url_login", {"provider": "example"})
    error = _start(live_app, "fail", {"message": "The tool failed: " + "long-word-" * 30})
    answered = _start(live_app, "approve_deploy", {"service": "answered"})
    for started in (deploy, all_kinds, url, answered):
        assert started["status"] == "waiting", started

    # One answered in the browser: the finished call shows the answers and the result.
    page = _new_page(browser, live_app, storage_state=sessions["person"])
    try:
        page.goto(answered["round"]["url"])
        reason = page.locator(f"input[name$='{field_name_for('reason')}']")
        reason.fill("Fixes " + "a-very-long-word" * 8)
        page.locator("button[name=action][value=accept]").click()
        page.wait_for_url("**/calls/*/", timeout=20_000)
        page.locator("section.result").wait_for(timeout=20_000)
    finally:
        _close(page)

    ids = live_app.shell(
        "import json\n"
        "from django.contrib.auth import get_user_model\n"
        "from django.contrib.auth.models import Group\n"
        f"print(json.dumps({{'person_pk': get_user_model().objects.get(username={PERSON[0]!r}).pk,"
        " 'group_pk': Group.objects.get(name='Operators').pk}))"
    )
    return {
        **json.loads(ids.strip().splitlines()[-1]),
        "finished_call": answered["id"],
        "answered_round": answered["round"]["id"],
        "waiting_call": all_kinds["id"],
        "error_call": error["id"],
        "all_kinds_round": all_kinds["round"]["id"],
        "deploy_round": deploy["round"]["id"],
        "url_round": url["round"]["id"],
    }


# -- the checks --------------------------------------------------------------------------------

# Elements reaching past the window's right edge (or wider than it), skipping what is not
# shown and what is clipped on purpose (visually hidden text for screen readers).
_OVERFLOW_JS = """
() => {
  const width = window.innerWidth;
  const found = [];
  const page = document.documentElement.scrollWidth;
  if (page > width) found.push(`the page is ${page} px wide`);
  for (const el of document.body.querySelectorAll("*")) {
    if (!el.checkVisibility()) continue;
    const box = el.getBoundingClientRect();
    if (box.width === 0 || box.height === 0) continue;
    if (box.width <= 2 && box.height <= 2) continue;  // visually hidden
    if (box.right > width + 0.5 || box.width > width) {
      let scroller = el.parentElement, inside = false;
      while (scroller && scroller !== document.body) {
        const style = getComputedStyle(scroller);
        if (/(auto|scroll|hidden|clip)/.test(style.overflowX)) {
          const outer = scroller.getBoundingClientRect();
          if (outer.right <= width + 0.5) { inside = true; break; }
        }
        scroller = scroller.parentElement;
      }
      if (inside) continue;
      const classes = typeof el.className === "string" ? el.className.trim() : "";
      const name = el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") +
        (classes ? "." + classes.split(/\\s+/).join(".") : "");
      const text = (el.textContent || "").trim().slice(0, 60);
      found.push(`${name} reaches ${Math.round(box.right)} px: ${text}`);
      if (found.length > 8) break;
    }
  }
  return found;
}
"""

# Controls smaller than 24x24 whose 24 px circle overlaps another control's (WCAG 2.2 2.5.8),
# leaving out links inside a sentence (its inline exception) and what is not shown.
_TARGETS_JS = """
(min) => {
  const selector = "a[href], button, input:not([type=hidden]), select, textarea, summary, " +
    "[role=button], [tabindex]:not([tabindex='-1'])";
  const shown = [];
  for (const el of document.querySelectorAll(selector)) {
    // Not shown: inside a closed <details> (the phone's menu), display: none, hidden.
    if (!el.checkVisibility({visibilityProperty: true})) continue;
    const box = el.getBoundingClientRect();
    const style = getComputedStyle(el);
    if (box.width === 0 || box.height === 0) continue;
    if (box.width <= 2 && box.height <= 2) continue;
    shown.push({el, box, style});
  }
  const inline = ({el, style}) => {
    if (!style.display.startsWith("inline") || el.tagName !== "A") return false;
    const block = el.parentElement.closest(
      "p, li, dd, td, span, div, label, small, h1, h2, h3, legend, caption, figcaption");
    if (!block) return false;
    return (block.textContent || "").trim().length > (el.textContent || "").trim().length;
  };
  const tooSmall = t => t.box.width < min - 0.5 || t.box.height < min - 0.5;
  const small = shown.filter(t => tooSmall(t) && !inline(t));
  const problems = [];
  const centre = b => [b.left + b.width / 2, b.top + b.height / 2];
  for (const t of small) {
    const [x, y] = centre(t.box);
    // Another control within the circle of radius 12 around t's centre, or (if small too)
    // whose own circle meets it: WCAG 2.2's spacing test.
    const near = shown.find(o => {
      if (o === t || o.el.contains(t.el) || t.el.contains(o.el)) return false;
      const dx = Math.max(o.box.left - x, 0, x - o.box.right);
      const dy = Math.max(o.box.top - y, 0, y - o.box.bottom);
      if (Math.hypot(dx, dy) < min / 2) return true;
      if (!small.includes(o)) return false;
      const [ox, oy] = centre(o.box);
      return Math.hypot(ox - x, oy - y) < min;
    });
    if (near) {
      const name = e => (e.getAttribute("aria-label") || e.textContent || e.name || e.type || "")
        .trim().slice(0, 40);
      const size = `${Math.round(t.box.width)}x${Math.round(t.box.height)}`;
      const other = `${near.el.tagName.toLowerCase()} "${name(near.el)}"`;
      problems.push(`${t.el.tagName.toLowerCase()} "${name(t.el)}" is ${size}, near ${other}`);
    }
  }
  return problems;
}
"""


def _axe(page: Any) -> list[dict[str, Any]]:
    """axe-core's violations only (collecting what passes would double the time)."""
    if not page.evaluate("typeof axe !== 'undefined'"):
        page.evaluate(AXE_JS.read_text(encoding="utf-8"))
    result = page.evaluate("axe.run(document, {resultTypes: ['violations']})")
    return list(result["violations"])


def _problems(page: Any, phone: bool) -> list[str]:
    found = [f"sideways: {text}" for text in page.evaluate(_OVERFLOW_JS)]
    if phone:
        found += [f"small target: {text}" for text in page.evaluate(_TARGETS_JS, MIN_TARGET)]
        # axe once a page and language (the time budget): at 390 px, where more can go wrong.
        violations = _axe(page)
        if violations:
            found.append("axe:\n" + format_violations(violations))
    return found


@pytest.fixture(scope="module")
def opened(browser: Any, live_app: LiveApp) -> Iterator[dict[tuple[str, str, str], Any]]:
    """One browser context per (role, screen, language), opened when first needed."""
    contexts: dict[tuple[str, str, str], Any] = {}
    yield contexts
    for page in contexts.values():
        _close(page)


def _page_for(
    opened: dict[tuple[str, str, str], Any],
    browser: Any,
    live_app: LiveApp,
    sessions: dict[str, Any],
    role: str,
    screen: str,
    language: str,
) -> Any:
    key = (role, screen, language)
    if key not in opened:
        page = _new_page(
            browser,
            live_app,
            storage_state=sessions[role],
            locale="de-DE" if language == "de" else "en-GB",
            extra_http_headers={"Accept-Language": "de" if language == "de" else "en"},
        )
        page.set_viewport_size(PHONE if screen == "phone" else DESKTOP)
        page.context.add_cookies(
            [{"name": "django_language", "value": language, "url": live_app.base_url}]
        )
        opened[key] = page
    return opened[key]


# About seventy pages, each checked by axe: longer than one page's test.
@pytest.mark.timeout(900)
@pytest.mark.parametrize("language", ["en", "de"])
@pytest.mark.parametrize("screen", ["phone", "desktop"])
def test_every_page_fits_and_passes_axe(
    browser: Any,
    live_app: LiveApp,
    sessions: dict[str, Any],
    site: dict[str, Any],
    opened: dict[tuple[str, str, str], Any],
    screen: str,
    language: str,
) -> None:
    failures = []
    for visit in PAGES:
        page = _page_for(opened, browser, live_app, sessions, visit.role, screen, language)
        path = visit.path(site)
        try:
            response = page.goto(path)
            assert response is not None
            if visit.then is not None:
                visit.then(page)
            page.wait_for_load_state()
        except Exception as exc:  # one broken page must not hide the others' problems
            failures.append(f"{visit.id} as {visit.role}: {path}: {exc}")
            continue
        status = response.status
        if status != visit.status:
            failures.append(f"{visit.id} as {visit.role}: {path} answered {status}")
            continue
        shot = PHONE_SHOTS.get(f"{visit.id} as {visit.role}")
        if screen == "phone" and language == "en" and shot:
            shoot(page, shot)
        problems = _problems(page, phone=screen == "phone")
        if problems:
            failures.append(
                f"{visit.id} as {visit.role} at {page.url}:\n  " + "\n  ".join(problems)
            )
    assert not failures, f"{len(failures)} page(s) at {screen}, {language}:\n" + "\n".join(failures)
