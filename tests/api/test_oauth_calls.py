"""Programs start calls on OAuth servers through the API (the real OAuth peer).

A caller who never connected their account is told where to, before anything starts; a call
whose caller's account lapses on the way waits, says so and where, and loses nothing.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from django.utils import timezone

from mrtrweb.calls.models import Call
from mrtrweb.oauth.headless import HeadlessAuthenticator
from mrtrweb.servers.catalog import refresh_catalog
from mrtrweb.servers.models import Connection
from tests.api.support import Api, expose, problem, start
from tests.peers.oauth_control import OAuthControl

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def oauth_conn(oauth_peer: Any) -> Connection:
    # Tested by an operator: end users are offered no untested server.
    conn = Connection.objects.create(
        name="guarded",
        url=oauth_peer.url,
        auth=Connection.Auth.OAUTH_PERSON,
        tested_at=timezone.now(),
    )
    return expose(conn, "request_approval", "echo")


def test_a_caller_who_never_connected_is_told_where_to_before_anything_starts(
    oauth_conn: Connection, ann_api: Api, settings: Any
) -> None:
    response = start(ann_api, server="guarded", name="echo", arguments={"text": "hi"})
    assert response.status_code == 409, response.content
    body = problem(response)
    assert body["type"].endswith("#problem-authorization-required")
    connect = settings.MRTRWEB_BASE_URL.rstrip("/") + "/oauth/connect/guarded/"
    assert connect in body["detail"]
    assert response["Link"] == f'<{connect}>; rel="authorize"'
    assert not Call.objects.exists()


def test_a_call_whose_caller_has_no_account_waits_and_says_where_to_connect(
    oauth_conn: Connection, ann_api: Api, oauth_peer: Any
) -> None:
    # Someone else's account listed the catalog; ann has none of her own.
    listing = HeadlessAuthenticator(
        httpx.AsyncClient(), oauth_peer.url, redirect_uri="http://127.0.0.1:9/callback"
    )
    assert refresh_catalog(oauth_conn, listing).ok
    control = OAuthControl.of(oauth_peer)
    since = control.log()[-1]["seq"] if control.log() else 0

    response = start(ann_api, server="guarded", name="echo", arguments={"text": "hi"})
    assert response.status_code == 201, response.content
    call = ann_api.get(f"/calls/{response.json()['id']}?wait=5").json()
    assert not call["finished"], call
    hold = call["waitingForAuthorization"]
    assert hold is not None, call
    assert hold["connectUrl"] == "http://testserver/oauth/connect/guarded/"
    assert hold["reason"]
    # The server answered the unauthenticated attempt with 401 and ran nothing.
    calls = [e for e in control.log(kind="mcp", since=since) if e.get("rpc_method") == "tools/call"]
    assert calls and all(e["status"] == 401 for e in calls)
