"""A cookie one person's call was given is never sent with another person's.

Every MCP request of a process goes through one pooled HTTP client on the shared loop
(mcp/io_loop.py), whatever person, connection or call it is for. httpx keeps the cookies a
server sets in the client's jar and sends them back with every later request to that server:
a server that signs a person in by cookie (or a gateway in front of it) would have seen the
next person's calls arrive as the first person's. The sessionless protocol has no use for
cookies (each request carries its own credentials and state), so MCP requests keep none.

The peer here is the real fastmcp server with ``--set-cookie``: every answer sets a cookie,
as a load balancer's affinity cookie or a session cookie would, and its ``request_info``
tool reports the headers the request came with.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from mrtrweb.calls import engine
from mrtrweb.calls.models import Call
from mrtrweb.people.roles import OPERATORS
from mrtrweb.servers.models import Connection
from tests.calls.engine.delivery_support import DATABASE_QUEUE
from tests.peers._common import PROTOCOL_VERSION
from tests.peers.fixtures import Peer
from tests.support.factories import make_user

pytestmark = pytest.mark.django_db(transaction=True)

COOKIE = "affinity"


@pytest.fixture(autouse=True)
def _hand_off(settings: Any) -> None:
    # Sent on a delivery thread over the shared loop's pooled client, as a page's start is.
    settings.TASKS = DATABASE_QUEUE
    settings.MRTRWEB_DELIVER_ON_ANSWER = True


def _echo(http: httpx.Client, url: str) -> None:
    meta = {
        "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "cookie-test", "version": "1"},
    }
    params = {"name": "echo", "arguments": {"text": "hi"}, "_meta": meta}
    answer = http.post(
        url,
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params},
        headers={
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": PROTOCOL_VERSION,
            "Mcp-Method": "tools/call",
            "Mcp-Name": "echo",
        },
    )
    assert answer.status_code == 200, answer.text


@pytest.fixture
def cookie_peer(peer_factory: Callable[..., Peer]) -> Peer:
    peer = peer_factory("fastmcp_server", "--set-cookie", COOKIE)
    # The peer sets it, and a client that keeps cookies (httpx's default) sends it back:
    # what the app's requests must not do.
    with httpx.Client() as http:
        _echo(http, peer.url)
        _echo(http, peer.url)
    sent = [dict(entry["headers"]).get("cookie") for entry in peer.recorded()]
    assert sent == [None, f"{COOKIE}=1"]
    peer.clear_recorded()
    return peer


def request_headers(conn: Connection, user: Any) -> dict[str, str]:
    """The HTTP headers the peer saw with ``user``'s call of ``request_info``."""
    call = engine.start_call(
        connection=conn,
        method=Call.Method.TOOL,
        target="request_info",
        arguments={},
        user=user,
        deliver_within=10.0,
    )
    assert call.status == Call.Status.COMPLETED, call.error
    headers = call.result["structuredContent"]["headers"]
    return {name.lower(): value for name, value in headers.items()}


def test_no_call_carries_a_cookie_the_server_set_for_an_earlier_one(cookie_peer: Peer) -> None:
    conn = Connection.objects.create(name="cookies", title="Cookies", url=cookie_peer.url)
    ada, grace = make_user("ada", OPERATORS), make_user("grace", OPERATORS)

    seen = [request_headers(conn, ada), request_headers(conn, grace), request_headers(conn, ada)]

    assert [headers.get("cookie") for headers in seen] == [None, None, None]
    # And no request at all (the calls' and anything before them) carried one.
    recorded = cookie_peer.recorded()
    assert recorded
    assert all(name != "cookie" for entry in recorded for name, _ in entry["headers"])
