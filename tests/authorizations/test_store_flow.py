"""The engine and the browser flow together: a person connects through the real pages
(connect -> authorization server -> callback), their round waits when their grant dies, the
email and the call page send them to reconnect, and the callback's ``connected`` signal sends
the round, once, with their new token. The server is tests/authorizations/oauth_peer.py with
the fastmcp peer behind it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from html import unescape
from typing import Any
from urllib.parse import urlencode, urlsplit

import pytest
from django.core import mail
from django.test import Client
from django.urls import reverse

from mrtrweb.authorizations.models import Authorization
from mrtrweb.calls import engine
from mrtrweb.calls.models import Call, Event, Round
from mrtrweb.servers.models import Connection
from tests.authorizations.conftest import listed, local, signed_in
from tests.authorizations.oauth_peer import OAuthPeer, oauth_peer
from tests.support.factories import make_connection

pytestmark = pytest.mark.django_db(transaction=True)

APPROVAL = {"approve": True, "replicas": 3, "window": "tonight", "notify": ["ops"]}


@pytest.fixture(autouse=True)
def _inline_tasks(inline_tasks: None) -> None:
    """Resubmissions and resumed sends run when their transaction commits."""


@pytest.fixture
def peer(client: Client) -> Iterator[OAuthPeer]:
    def fetch(url: str) -> dict[str, Any] | None:
        response = Client().get(urlsplit(url).path)
        return response.json() if response.status_code == 200 else None

    with oauth_peer(mcp=True, fetch_document=fetch) as running:
        yield running


@pytest.fixture
def files(peer: OAuthPeer) -> Connection:
    # The echo tool exposed, so Ada (an end user) may start calls, and connect, on it.
    return listed(make_connection(peer=None, name="files", url=peer.mcp_url, title="Files server"))


def connect_through_the_pages(browser: Client, peer: OAuthPeer, url: str) -> str:
    """Follow a "Connect your account" link to the end; where the person lands."""
    page = browser.get(url)
    assert page.status_code == 200
    path, _, query = url.partition("?")
    next_ = dict(pair.split("=", 1) for pair in query.split("&"))["next"].replace("%2F", "/")
    sent = browser.post(path, {"next": next_})
    assert sent.status_code == 303, sent.content.decode()[:2000]
    back = browser.get(local(peer.browse(sent["Location"])))
    assert back.status_code in (302, 303), back.content.decode()[:2000]
    return back["Location"]


def bearers_of_tool_calls(peer: OAuthPeer, since: int = 0) -> list[str]:
    return [token for token in peer.mcp_bearers[since:] if token]


def test_a_dead_grant_waits_for_the_caller_and_the_pages_bring_them_back(
    peer: OAuthPeer, files: Connection, ada: Any, bob: Any
) -> None:
    ada.first_name, ada.last_name, ada.email = "Ada", "Lovelace", "ada@example.com"
    ada.save()
    as_ada = signed_in(ada)
    # Ada connects her account first, as the start form would send her to.
    start = reverse_connect(files, "/calls/")
    assert connect_through_the_pages(as_ada, peer, start) == "/calls/"
    first = Authorization.objects.get(connection=files, user=ada)

    call = engine.start_call(
        connection=files,
        method=Call.Method.TOOL,
        target="approve_deploy",
        arguments={"service": "api"},
        user=ada,
    )
    assert call.status == Call.Status.WAITING, call.error
    assert peer.mcp_bearers[-1] == first.access_token
    round = call.rounds.get()

    # Her grant dies at the server (revoked there): tokens and refresh token refused.
    peer.access_tokens.clear()
    peer.refresh_tokens.clear()
    mail.outbox.clear()
    seen = len(peer.mcp_bearers)
    round = engine.answer(round, {"approval": {"action": "accept", "content": APPROVAL}}, bob)
    assert round.status == Round.Status.SUBMITTED
    call.refresh_from_db()
    assert call.waiting_for_authorization_since is not None
    assert [m.to for m in mail.outbox] == [["ada@example.com"]]
    link = re.search(r"http://\S+/oauth/connect/files/\S+", mail.outbox[0].body)
    assert link is not None, mail.outbox[0].body

    # Bob sees who the round waits for; Ada gets the button, to the same place as the email.
    page = signed_in(bob).get(round.get_absolute_url()).content.decode()
    assert "Waiting for Ada Lovelace to reconnect their account on Files server" in page
    assert "Reconnect your account" not in page
    mine = unescape(as_ada.get(call.get_absolute_url()).content.decode())
    button = re.search(r'href="(/oauth/connect/files/\?next=[^"]+)"[^>]*>Reconnect', mine)
    assert button is not None
    assert local(link.group(0)) == button.group(1)

    # She reconnects: the callback stores the tokens, its signal sends the round, once.
    assert connect_through_the_pages(as_ada, peer, button.group(1)) == call.get_absolute_url()
    now = Authorization.objects.get(connection=files, user=ada)
    assert now.status == Authorization.Status.ACTIVE and now.version > first.version
    round.refresh_from_db()
    call.refresh_from_db()
    assert round.status == Round.Status.DELIVERED
    assert call.status == Call.Status.COMPLETED, call.error
    assert call.waiting_for_authorization_since is None
    # Refused once with the dead token, then exactly one resubmission, with her new token.
    assert bearers_of_tool_calls(peer, seen) == [first.access_token, now.access_token]
    assert Event.objects.filter(call=call, kind="authorization_resumed").count() == 1
    for event in Event.objects.filter(call=call):
        assert "sekret" not in str(event.detail)


def reverse_connect(connection: Connection, next_: str) -> str:
    path = reverse("authorizations:connect", kwargs={"connection": connection.name})
    return f"{path}?{urlencode({'next': next_})}"
