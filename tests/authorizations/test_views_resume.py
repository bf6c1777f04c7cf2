"""The whole way back through the pages: a call waits for its caller's account, the caller
follows the call page's Reconnect link, connects at the authorization server, comes back to
the call, and the call goes out with their new token (the engine resumes it on
``authorizations.signals.connected``, sent by the callback once the tokens are committed)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from html import unescape

import pytest

from mrtrweb.authorizations.models import Authorization
from mrtrweb.calls import engine
from mrtrweb.calls.models import Call
from mrtrweb.people.roles import END_USERS, ensure_roles
from mrtrweb.servers.models import ToolExposure
from tests.authorizations.conftest import local, signed_in
from tests.authorizations.oauth_peer import OAuthPeer, oauth_peer
from tests.support.factories import make_connection, make_user

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _inline_tasks(inline_tasks: None) -> None:
    """The resumed send runs when its transaction commits."""


@pytest.fixture
def peer() -> Iterator[OAuthPeer]:
    with oauth_peer(mcp=True) as running:
        yield running


def test_a_waiting_call_resumes_after_connecting_through_the_pages(peer: OAuthPeer) -> None:
    ensure_roles()
    ada = make_user("ada", END_USERS, first_name="Ada", last_name="Lovelace")
    conn = make_connection(name="files", title="Files", url=peer.mcp_url)
    ToolExposure.objects.create(connection=conn, tool_name="echo", exposed=True)
    call = engine.start_call(
        connection=conn,
        method=Call.Method.TOOL,
        target="echo",
        arguments={"text": "still here"},
        user=ada,
    )
    call.refresh_from_db()
    assert call.waiting_for_authorization_since is not None
    assert call.status == Call.Status.RUNNING and call.sent_at is None

    browser = signed_in(ada)
    page = unescape(browser.get(call.get_absolute_url()).content.decode())
    link = re.search(r'href="(/oauth/connect/files/\?next=[^"]+)"', page)
    assert link is not None, page
    connect_page = browser.get(link.group(1))
    assert connect_page.status_code == 200
    next_ = re.search(r'name="next" value="([^"]+)"', connect_page.content.decode())
    assert next_ is not None and next_.group(1) == call.get_absolute_url()

    sent_to = browser.post("/oauth/connect/files/", {"next": next_.group(1)})
    back = browser.get(local(peer.browse(sent_to["Location"])))
    assert back.status_code == 303
    assert back["Location"] == call.get_absolute_url()

    call.refresh_from_db()
    assert call.waiting_for_authorization_since is None
    assert call.status == Call.Status.COMPLETED, call.error
    token = Authorization.objects.get(user=ada).access_token
    assert peer.mcp_bearers[-1] == token
    done = browser.get(back["Location"]).content.decode()
    assert "still here" in done
    assert token not in done
