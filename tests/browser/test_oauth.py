"""OAuth, per person, in Chromium: against a real fastmcp server behind a real OAuth server.

One story, told in order because each step needs the one before. The peer is
tests/peers/oauth_server.py (fastmcp's in-memory authorization server, approving without a
person; access tokens live 5 s), and its log names the grant behind every token a call carried.

1. An operator adds a connection to the peer, "OAuth, per person", reads what discovery found
   on its OAuth panel, and exposes ``request_approval`` with its rounds routed to "Approvers".
2. Eve (an end user) starts the tool, is sent to "Connect your account", through the peer's
   authorization server and back to the start form with what she typed kept; the call parks.
3. Ann (an approver) answers; the resubmission carries Eve's token: the grant made when Eve
   connected (fastmcp would refuse anyone else's: it binds requestState to the subject).
4. The access token expires; the next call and its resubmission are sent after a silent
   refresh, nobody is asked anything.
5. The peer revokes every refresh token: the answered round waits, Eve and Ann are told Eve must
   reconnect; Eve reconnects and the call completes, still as Eve.
6. Eve's connected accounts list the connection. No page, redirect, socket message or server
   log of the whole story carries a token (every one the peer issued is searched for).

A second test connects through a peer that takes client ID metadata documents and offers no
registration: it fetches mrtrweb's document from the running app, and the call's token is
issued to that client.

With ``MRTRWEB_SCREENSHOTS=docs/images`` the screens are saved for docs/operator-guide.md and
docs/user-guide.md (``oauth-*``).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

from tests.peers.fixtures import Peer, running_peer
from tests.peers.oauth_control import OAuthControl

from .conftest import (
    APPROVERS,
    END_USER,
    OPERATOR,
    LiveApp,
    assert_accessible,
    expect,
    shoot,
)

if TYPE_CHECKING:
    from playwright.sync_api import Locator, Page

pytestmark = pytest.mark.browser

DELIVERY_TIMEOUT = 20_000
CONNECTION = "guarded"
TITLE = "Guarded tools"
TOOL = "request_approval"
# Who the peer's authorization server says approved (one person per browser).
EVE_AT_PEER = "eve-at-the-peer"
OLGA_AT_PEER = "olga-at-the-peer"
MARK = "sekret"  # in every code, token and client secret the peer issues


@pytest.fixture(scope="module")
def oauth_browser_peer() -> Iterator[Peer]:
    with running_peer("oauth_server", "--access-ttl", "5") as peer:
        yield peer


class Seen:
    """Everything the browsers received from the app: pages (as rendered and as sent),
    redirect addresses, and socket messages; searched for tokens at the end."""

    def __init__(self, app: LiveApp) -> None:
        self.app = app
        self.texts: list[tuple[str, str]] = []

    def watch(self, page: Page) -> Page:
        page.on("response", self._response)
        page.on("websocket", self._socket)
        return page

    def _response(self, response: Any) -> None:
        url = response.url
        if not url.startswith(self.app.base_url):
            return
        location = response.headers.get("location")
        if location:
            self.texts.append((f"redirect from {url}", location))
        kind = response.headers.get("content-type", "")
        if response.status < 300 and any(t in kind for t in ("html", "json", "text")):
            # A body gone with a navigation is covered by the page's snapshot.
            with contextlib.suppress(Exception):
                self.texts.append((url, response.text()))

    def _socket(self, socket: Any) -> None:
        socket.on("framereceived", lambda frame: self.texts.append((socket.url, str(frame))))

    def snapshot(self, page: Page) -> None:
        self.texts.append((page.url, page.content()))

    def leaks(self, secrets: list[str]) -> list[str]:
        found = []
        for where, text in self.texts:
            if MARK in text:
                found.append(f"{where}: carries '{MARK}'")
            found += [f"{where}: carries a token" for s in secrets if s in text]
        return found


def _press(page: Page, name: str) -> None:
    page.get_by_role("button", name=name, exact=True).click()
    page.wait_for_load_state()


def _exposure_row(page: Page, tool: str) -> Locator:
    return page.locator("li.exposure").filter(
        has=page.locator(".exposure-tool code", has_text=re.compile(rf"^{tool}$"))
    )


def _inbox_item(page: Page, question: str) -> Locator:
    return page.locator("li.inbox-item").filter(has_text=question)


# -- 1. the operator -------------------------------------------------------------------------


def _operator_adds_the_connection(page: Page, peer: Peer) -> None:
    page.goto("/operators/new/")
    page.get_by_label("Name", exact=True).fill(CONNECTION)
    page.get_by_label("Title").fill(TITLE)
    page.get_by_label("URL", exact=True).fill(peer.url)
    page.get_by_label("OAuth: each person connects their own account").check()
    assert_accessible(page)
    shoot(page, "oauth-connection-auth", at=page.get_by_text("How mrtrweb authenticates"))
    _press(page, "Add the connection")
    expect(page).to_have_url(re.compile(rf"/operators/{CONNECTION}/edit/$"))


def _operator_reads_discovery(page: Page, peer: Peer) -> None:
    control = OAuthControl.of(peer)
    page.goto(f"/oauth/connections/{CONNECTION}/")
    _press(page, "Discover now")
    panel = page.locator("main")
    expect(panel).to_contain_text(control.issuer)
    expect(panel).to_contain_text(peer.url)
    expect(panel).to_contain_text("mcp:tools")
    assert_accessible(page)
    shoot(page, "oauth-discovery")


def _operator_connects_and_lists(page: Page, control: OAuthControl) -> None:
    """Nobody may list the catalog without an account: the operator connects theirs from the
    start page, and the catalog is listed with it (and kept for everyone)."""
    page.goto(f"/calls/start/{CONNECTION}/")
    control.set_subject(OLGA_AT_PEER)
    page.get_by_role("link", name="Connect your account").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("Connect your account")
    _press(page, "Connect your account")
    control.set_subject(None)
    expect(page).to_have_url(re.compile(rf"/calls/start/{CONNECTION}/"))
    expect(page.get_by_role("link", name="Request Approval", exact=True)).to_be_visible()


def _operator_exposes(page: Page) -> None:
    page.goto(f"/operators/{CONNECTION}/exposure/")
    row = _exposure_row(page, TOOL)
    row.get_by_label("End users may start it").check()
    expect(row.get_by_role("status")).to_have_text("Saved.")
    row = _exposure_row(page, TOOL)
    row.get_by_label("Who answers").select_option(label="a group (members claim the round)")
    row.get_by_label("Group").select_option(label=APPROVERS)
    row.get_by_role("button", name=f"Save {TOOL}").click()
    expect(_exposure_row(page, TOOL).get_by_role("status")).to_have_text("Saved.")


# -- 2.-6. ------------------------------------------------------------------------------------


def _start(page: Page, action: str) -> None:
    page.goto(f"/calls/start/{CONNECTION}/")
    page.get_by_role("link", name="Request Approval", exact=True).click()
    page.get_by_label("action").fill(action)
    _press(page, "Call the tool")


def _to_the_call(page: Page) -> str:
    """From the round page the caller lands on (the group answers it) to the call's page."""
    if re.search(r"/rounds/\d+/$", page.url):
        expect(page.locator(".notice.claim")).to_contain_text(f"Asked of the group {APPROVERS}")
        page.get_by_role("link", name=re.compile(r"^Call \d+$")).click()
    expect(page).to_have_url(re.compile(r"/calls/\d+/$"))
    return page.url


def _answer(page: Page, question: str) -> str:
    """Claim the round in the inbox and approve it; returns the round page's address."""
    page.goto("/inbox/")
    item = _inbox_item(page, question)
    item.get_by_role("button", name="Claim", exact=True).click()
    # The claim's own page load first: a click before it lands is undone by it (seen once in
    # a clean clone, the claim's redirect back to the inbox winning over the round's link).
    expect(_inbox_item(page, question)).to_contain_text("Claimed by you")
    _inbox_item(page, question).get_by_role("link", name=question).click()
    expect(page).to_have_url(re.compile(r"/rounds/\d+/$"))
    round_url = page.url
    page.get_by_label("Approve").check()
    _press(page, "Submit")
    return round_url


def test_oauth_per_person_story(
    page_as: Callable[[str], Page], live_app: LiveApp, oauth_browser_peer: Peer
) -> None:
    peer = oauth_browser_peer
    control = OAuthControl.of(peer)
    seen = Seen(live_app)

    operator = seen.watch(page_as("operator"))
    _operator_adds_the_connection(operator, peer)
    _operator_reads_discovery(operator, peer)
    _operator_connects_and_lists(operator, control)
    _operator_exposes(operator)

    # 2. Eve starts the tool and is sent to connect her account first.
    eve = seen.watch(page_as("end_user"))
    control.set_subject(EVE_AT_PEER)
    _start(eve, "ship v2")
    expect(eve.get_by_role("heading", level=1)).to_contain_text("Connect your account")
    assert_accessible(eve)
    shoot(eve, "oauth-connect")
    seen.snapshot(eve)
    before = control.mark()
    _press(eve, "Connect your account")
    # Through the peer's authorization server and back to the start form, nothing lost.
    expect(eve).to_have_url(re.compile(rf"/calls/start/{CONNECTION}/"))
    expect(eve.get_by_label("action")).to_have_value("ship v2")
    [approval] = control.log("authorize", since=before)
    assert approval["subject"] == EVE_AT_PEER and approval["iss"] == control.issuer
    eve_grant = approval["grant"]
    control.set_subject(None)
    _press(eve, "Call the tool")
    call_url = _to_the_call(eve)
    expect(eve.locator(".call-status")).to_contain_text("Waiting for an answer")
    seen.snapshot(eve)

    # 3. Ann answers; the resubmission carries Eve's token.
    ann = seen.watch(page_as("approver_1"))
    mark = control.mark()
    _answer(ann, "Approve: ship v2?")
    eve.goto(call_url)
    expect(eve.locator("section.result")).to_contain_text(
        f"ship v2: approved; ran as {EVE_AT_PEER}", timeout=DELIVERY_TIMEOUT
    )
    seen.snapshot(eve)
    [resubmission] = [c for c in control.calls(TOOL, since=mark) if c["resubmission"]]
    assert resubmission["grant"] == eve_grant
    assert resubmission["subject"] == EVE_AT_PEER
    assert resubmission["status"] == 200
    # Ann never connected: only the operator and Eve approved at the peer.
    assert {g["subject"] for g in control.grants()} == {OLGA_AT_PEER, EVE_AT_PEER}

    # 4. The access token expires; the next call and its answer go out after a silent refresh.
    control.expire_access_tokens()
    mark = control.mark()
    _start(eve, "ship v3")
    call_url = _to_the_call(eve)
    control.expire_access_tokens()
    _answer(ann, "Approve: ship v3?")
    eve.goto(call_url)
    expect(eve.locator("section.result")).to_contain_text(
        f"ship v3: approved; ran as {EVE_AT_PEER} (grant {eve_grant})", timeout=DELIVERY_TIMEOUT
    )
    expect(eve.locator(".waiting-authorization")).to_have_count(0)
    refreshes = [e for e in control.log("token", since=mark) if e["grant_type"] == "refresh_token"]
    assert len(refreshes) >= 2
    assert all(e["status"] == 200 and e["grant"] == eve_grant for e in refreshes)
    assert not control.log("authorize", since=mark)  # nobody was sent to connect
    calls = [c for c in control.calls(TOOL, since=mark) if c["status"] == 200]
    # The first call and the resubmission, each with a freshly refreshed token of Eve's grant.
    assert [c["resubmission"] for c in calls] == [False, True]
    assert {c["grant"] for c in calls} == {eve_grant}
    assert calls[0]["token"] != calls[1]["token"]

    # 5. Refresh tokens revoked: the answered round waits for Eve to reconnect.
    _start(eve, "ship v4")
    call_url = _to_the_call(eve)
    control.revoke_refresh_tokens(access_tokens=True)
    mark = control.mark()
    round_url = _answer(ann, "Approve: ship v4?")
    eve.goto(call_url)
    wait = eve.locator(".waiting-authorization")
    expect(wait).to_contain_text("reconnect", timeout=DELIVERY_TIMEOUT)
    assert_accessible(eve)
    shoot(eve, "oauth-reconnect")
    seen.snapshot(eve)
    ann.goto(round_url)
    expect(ann.locator(".waiting-authorization")).to_contain_text("to reconnect their account")
    expect(ann.get_by_role("link", name="Reconnect your account")).to_have_count(0)
    shoot(ann, "oauth-reconnect-round", at=ann.locator(".waiting-authorization"))
    seen.snapshot(ann)
    control.set_subject(EVE_AT_PEER)
    eve.get_by_role("link", name="Reconnect your account").click()
    _press(eve, "Connect your account")
    control.set_subject(None)
    eve.goto(call_url)
    expect(eve.locator("section.result")).to_contain_text(
        f"ship v4: approved; ran as {EVE_AT_PEER}", timeout=DELIVERY_TIMEOUT
    )
    seen.snapshot(eve)
    # The refresh was refused (revoked), the call waited; after Eve's new grant it went out.
    refused = [e for e in control.log("token", since=mark) if e["grant_type"] == "refresh_token"]
    assert refused and refused[0]["error"] == "invalid_grant"
    assert refused[0]["refresh_token_status"] == "revoked"
    [done] = [c for c in control.calls(TOOL, since=mark) if c["status"] == 200]
    assert done["resubmission"] and done["subject"] == EVE_AT_PEER
    assert done["grant"] == control.grants()[-1]["serial"] != eve_grant

    # 6. Her connected accounts; and no token anywhere.
    eve.goto("/oauth/accounts/")
    expect(eve.locator("main")).to_contain_text(TITLE)
    assert_accessible(eve)
    shoot(eve, "oauth-accounts")
    seen.snapshot(eve)
    # The operator sees who connected, on the connection's OAuth panel.
    operator.goto(f"/oauth/connections/{CONNECTION}/")
    people = operator.locator("table").filter(has_text="Who")
    expect(people).to_contain_text(END_USER[0])
    expect(people).to_contain_text(OPERATOR[0])
    assert_accessible(operator)
    shoot(operator, "oauth-authorizations", at=operator.locator("#clients-heading"))
    for page in (operator, eve, ann):
        seen.snapshot(page)
    secrets = control.token_values()
    assert secrets, "the peer issued no tokens?"
    assert not seen.leaks(secrets), "\n".join(seen.leaks(secrets)[:20])
    for name in live_app.processes:
        log = live_app.log(name)
        assert MARK not in log, f"the {name} log carries an issued secret"
        assert not [s for s in secrets if s in log]
    # The watch saw the story: pages, and the redirects to the peer's authorization endpoint.
    assert sum("<html" in text for _, text in seen.texts) > 30
    assert any(
        where.startswith("redirect") and text.startswith(f"{peer.base_url}/authorize?")
        for where, text in seen.texts
    )


# -- mrtrweb's client ID metadata document --------------------------------------------------


@pytest.fixture(scope="module")
def cimd_peer() -> Iterator[Peer]:
    """The peer taking client ID metadata documents, and no dynamic registration."""
    with running_peer("oauth_server", "--cimd", "--no-dcr") as peer:
        yield peer


def test_the_authorization_server_reads_mrtrweb_client_id_metadata_document(
    page_as: Callable[[str], Page], live_app: LiveApp, cimd_peer: Peer
) -> None:
    """Where the authorization server takes them, mrtrweb's client ID is the address of its
    own metadata document, which the server fetches from the running app."""
    control = OAuthControl.of(cimd_peer)
    live_app.manage("mcp_server", "add", "--name", "cimd", "--url", cimd_peer.url)
    operator = page_as("operator")
    operator.goto("/calls/start/cimd/")
    operator.get_by_role("link", name="Connect your account").click()
    _press(operator, "Connect your account")
    expect(operator).to_have_url(re.compile(r"/calls/start/cimd/"))
    client_id = f"{live_app.base_url}/oauth/client-metadata.json"
    [fetch] = control.cimd_fetches()
    assert fetch["url"] == client_id and fetch.get("accepted") is True, fetch
    [client] = control.clients()
    assert client["client_id"] == client_id
    assert client["token_endpoint_auth_method"] == "none"
    assert client["redirect_uris"] == [f"{live_app.base_url}/oauth/callback/"]
    # The call goes out with a token issued to that client.
    operator.get_by_role("link", name="Whoami", exact=True).click()
    _press(operator, "Call the tool")
    expect(operator.locator("section.result")).to_contain_text(client_id)
    assert [c["client_id"] for c in control.calls("whoami")] == [client_id]
    assert not control.log("register")  # it never registered itself
