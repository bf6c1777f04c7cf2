"""Websockets on the app as ``make run`` serves it: uvicorn on 127.0.0.1, a person signed in
through the login page, a real call on the fastmcp peer, and a websocket client
(``websockets``, the one uvicorn speaks with) carrying the person's cookie as a browser would:
pages from another origin are refused, and signing out closes the sockets of that session.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import ClientConnection, connect

from tests.peers.fixtures import Peer
from tests.support.processes import (
    ServedApp,
    app_environment,
    free_port,
    start_uvicorn,
    wait_until_served,
)
from tests.support.web import csrf_token, signed_in_client

PERSON = ("sam", "sam-served-pw-1")
QUIET = 0.5  # seconds a socket that is listening stays silent


@pytest.fixture(scope="module")
def served(fastmcp_process_peer: Peer) -> Iterator[ServedApp]:
    root = Path(tempfile.mkdtemp(prefix="mrtrweb-sockets-"))
    app = ServedApp(root=root, env=app_environment(root))
    try:
        app.migrate()
        app.shell(
            "from django.contrib.auth import get_user_model\n"
            f"get_user_model().objects.create_user({PERSON[0]!r}, password={PERSON[1]!r})\n"
        )
        app.manage("mcp_server", "add", "--name", "peer", "--url", fastmcp_process_peer.url)
        app.pick_port()
        start_uvicorn(app, port=app.port, lifespan=True)
        wait_until_served(app)
        yield app
    finally:
        app.stop()
        shutil.rmtree(root, ignore_errors=True)


def start_call(app: ServedApp) -> int:
    """A call of PERSON's, waiting on its first round."""
    done = app.manage(
        *("mcp_call", "--server", "peer", "--tool", "purchase"),
        *("--arguments", json.dumps({"item": "lamp"}), "--user", PERSON[0]),
    )
    return int(json.loads(done.stdout)["id"])


def sign_in(app: ServedApp) -> str:
    """A new session of PERSON's, through the login page; its cookie's value."""
    http = signed_in_client(app.base_url, *PERSON)
    http.close()
    return str(http.cookies["sessionid"])


def open_socket(app: ServedApp, path: str, session: str, origin: str) -> ClientConnection:
    return connect(
        app.base_url.replace("http://", "ws://") + path,
        origin=origin,  # type: ignore[arg-type]
        additional_headers={"Cookie": f"sessionid={session}"},
        open_timeout=10,
    )


def listening(socket: ClientConnection) -> bool:
    """Open and silent for a while (not closed with 4401 or 4403)."""
    try:
        socket.recv(timeout=QUIET)
    except TimeoutError:
        return True
    return False


def test_a_page_on_another_port_cannot_open_the_person_s_sockets(served: ServedApp) -> None:
    call_id = start_call(served)
    session = sign_in(served)
    paths = (f"/ws/calls/{call_id}/", "/ws/inbox/")
    other_port = free_port()
    while other_port == served.port:
        other_port = free_port()
    for origin in (f"http://127.0.0.1:{other_port}", "http://127.0.0.1", "http://localhost"):
        for path in paths:
            with (
                pytest.raises(InvalidStatus) as refused,
                open_socket(served, path, session, origin),
            ):
                pass
            assert refused.value.response.status_code == 403, (origin, path)
    # The person's own pages, served from the app's own origin, listen.
    for path in paths:
        with open_socket(served, path, session, served.base_url) as own:
            assert listening(own), path


def closed_with(socket: ClientConnection) -> int | None:
    with pytest.raises(ConnectionClosed) as closed:
        while True:  # frames sent before the close are not what this is about
            socket.recv(timeout=10)
    return closed.value.rcvd.code if closed.value.rcvd else None


def test_signing_out_closes_the_sockets_that_session_opened(served: ServedApp) -> None:
    call_id = start_call(served)
    laptop = signed_in_client(served.base_url, *PERSON)
    phone = sign_in(served)  # the same person in another browser
    session = str(laptop.cookies["sessionid"])
    paths = (f"/ws/calls/{call_id}/", "/ws/inbox/")
    with contextlib.ExitStack() as opened:
        opened.callback(laptop.close)
        on_laptop = [
            opened.enter_context(open_socket(served, path, session, served.base_url))
            for path in paths
        ]
        on_phone = [
            opened.enter_context(open_socket(served, path, phone, served.base_url))
            for path in paths
        ]
        assert all(listening(socket) for socket in on_laptop + on_phone)

        # The "Sign out" button of any page.
        page = laptop.get("/")
        out = laptop.post("/accounts/logout/", data={"csrfmiddlewaretoken": csrf_token(page.text)})
        assert out.status_code == 302

        assert [closed_with(socket) for socket in on_laptop] == [4401, 4401]
        assert all(listening(socket) for socket in on_phone)
