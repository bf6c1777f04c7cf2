"""Faults around handshake-era calls, with real processes: the web process that holds a call's
stream killed (SIGKILL) while a round waits, and the MCP server restarted, mid-call and between
calls.

A handshake-era call lives in the one process holding its stream. When that process dies or
the stream breaks, the waiting round is marked lost (the expired path, with a plain message),
the answers already given are kept, and "Start again" re-issues the call with them filled in.
A restarted server forgot its sessions: the next call opens a new one, and every session a
call opened is closed.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from mrtrweb.calls.engine.streams import LOST_BEFORE_ANSWER
from tests.api.handshake_live import Caller, request_of, result_text, seed_code
from tests.peers.mcp1 import Mcp1Peer
from tests.support.processes import (
    ServedApp,
    app_environment,
    kill,
    start_db_worker,
    start_uvicorn,
    wait_until_served,
)
from tests.support.web import csrf_token, signed_in_client

PERSON = ("hana", "hana-faults-pw-1")
# Seconds after its last heartbeat that a stream's owner counts as dead (MRTRWEB_STREAM_GRACE):
# short, so a test waits little (the owner then beats every third of it).
STREAM_GRACE = "2"

_PERSON = """
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from mrtrweb.api.models import ApiToken
hana = get_user_model().objects.create_user({name!r}, password={password!r})
hana.groups.add(Group.objects.get(name="End users"))
print(ApiToken.issue(hana, "tests")[1])
"""


@dataclass
class Stack:
    app: ServedApp
    token: str

    def start_web(self) -> None:
        start_uvicorn(self.app, port=self.app.port, lifespan=True)
        wait_until_served(self.app)

    def kill_web(self) -> None:
        """SIGKILL: no cleanup, no DELETE, no last word: exactly a crash."""
        kill(self.app.processes.pop("web"))

    def caller(self) -> Caller:
        return Caller(self.app.base_url, self.token)

    def register(self, name: str, peer: Mcp1Peer) -> None:
        self.app.shell(seed_code({name: peer}))


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    root = Path(tempfile.mkdtemp(prefix="mrtrweb-hs-faults-"))
    app = ServedApp(
        root=root,
        env=app_environment(root, MRTRWEB_INPROCESS_WORKER="0", MRTRWEB_STREAM_GRACE=STREAM_GRACE),
    )
    try:
        app.migrate()
        token = app.shell(_PERSON.format(name=PERSON[0], password=PERSON[1])).split()[-1]
        app.pick_port()
        stack = Stack(app, token)
        stack.start_web()
        # The worker's safety nets notice an owner whose heartbeat stopped.
        start_db_worker(app, interval=0.2)
        yield stack
    finally:
        app.stop()
        shutil.rmtree(root, ignore_errors=True)


def _answer_the_name(caller: Caller, name: str, server: str) -> tuple[dict, dict]:
    """ask_twice started, its first question answered with ``name``; the call, and the second
    round, now waiting on the server's stream."""
    call = caller.start(server, "ask_twice")
    first = caller.next_round(call)
    assert first is not None, call
    assert caller.answer(first, "accept", {"name": name}).status_code == 202
    second = caller.next_round(caller.call(call["id"]), after=first["index"])
    assert second is not None
    assert request_of(second)["params"]["message"] == f"Hello {name}: your favourite colour?"
    return call, second


def _lost(caller: Caller, call_id: int) -> dict:
    lost = caller.finished(call_id)
    assert lost["status"] == "expired", lost
    # A plain message: the person had not answered the waiting question yet.
    assert lost["error"] == LOST_BEFORE_ANSWER, lost
    first, second = lost["rounds"]
    assert first["status"] == "delivered"
    assert second["status"] == "expired"
    return lost


def _start_again_with(stack: Stack, caller: Caller, call_id: int, name: str) -> dict:
    """Start again, from the call's page as the person: the new call's first round holds the
    name given before. Returns that round (as the API shows it)."""
    web = signed_in_client(stack.app.base_url, *PERSON)
    try:
        page = web.get(f"/calls/{call_id}/")
        assert page.status_code == 200
        assert "Start again" in page.text
        again = web.post(
            f"/calls/{call_id}/restart/", data={"csrfmiddlewaretoken": csrf_token(page.text)}
        )
        assert again.status_code == 303, again.text[:1000]
        # The round's page, or (a server slower than the start page waits) the call's page.
        landed = web.get(again.headers["location"])
        at = str(landed.url)
        if found := re.search(r"/rounds/(\d+)/$", at):
            pending = caller.http.get("/rounds", params={"status": "pending"}).json()["rounds"]
            (first,) = [r for r in pending if r["id"] == int(found[1])]
        else:
            found = re.search(r"/calls/(\d+)/$", at)
            assert found, at
            first = caller.next_round(caller.call(int(found[1])))
        assert first is not None and first["callId"] != call_id, first
        round_page = web.get(f"/rounds/{first['id']}/")
        assert round_page.status_code == 200
        assert re.search(rf'value="{name}"', round_page.text), round_page.text[:3000]
        return first
    finally:
        web.close()


def _finish_restarted(
    caller: Caller, first: dict, name: str, colour_kept: str | None = None
) -> dict:
    assert caller.answer(first, "accept", {"name": name}).status_code == 202
    second = caller.next_round(caller.call(first["callId"]), after=first["index"])
    assert second is not None, json.dumps(caller.call(first["callId"]))[:3000]
    if colour_kept is not None:
        web = signed_in_client(caller.base_url, *PERSON)
        try:
            page = web.get(f"/rounds/{second['id']}/")
        finally:
            web.close()
        assert re.search(rf'value="{colour_kept}"', page.text), page.text[:3000]
    assert caller.answer(second, "accept", {"color": "teal"}).status_code == 202
    done = caller.finished(first["callId"])
    assert (done["status"], result_text(done)) == ("completed", f"{name} likes teal")
    return done


def test_the_owning_web_process_killed_while_a_round_waits(
    stack: Stack, mcp1_factory: Callable[..., Mcp1Peer]
) -> None:
    peer = mcp1_factory()
    stack.register("kill-owner", peer)
    caller = stack.caller()
    call, _ = _answer_the_name(caller, "Kiri", "kill-owner")
    stack.kill_web()
    stack.start_web()  # a new process, which never held that stream
    _lost(caller, call["id"])
    first = _start_again_with(stack, caller, call["id"], "Kiri")
    done = _finish_restarted(caller, first, "Kiri")
    assert done["rounds"][0]["status"] == "delivered"
    # The restarted call opened its own session and closed it; the dead process's session is
    # the only one left open (nobody was left to close it).
    assert peer.sessions()["active"] <= 1


def test_the_server_restarted_while_a_round_waits(
    stack: Stack, mcp1_factory: Callable[..., Mcp1Peer]
) -> None:
    """The stream breaks while the person reads the second question. Nothing reads the stream
    while a question waits (a read timeout would end healthy waits), so the break is found
    when the answer is sent: the round is lost, the answer kept, and Start again fills in both
    answers."""
    peer = mcp1_factory()
    stack.register("restarts-mid-call", peer)
    caller = stack.caller()
    call, second = _answer_the_name(caller, "Rua", "restarts-mid-call")
    peer.stop()  # the stream breaks
    again = mcp1_factory(port=peer.port)
    assert caller.answer(second, "accept", {"color": "teal"}).status_code == 202
    _lost(caller, call["id"])
    lost = caller.call(call["id"])["rounds"][1]
    assert lost["answeredBy"] == PERSON[0]  # the answer is kept with the round
    first = _start_again_with(stack, caller, call["id"], "Rua")
    _finish_restarted(caller, first, "Rua", colour_kept="teal")
    after = again.sessions()
    assert after["opened"] == after["closed"] >= 1 and after["active"] == 0


def test_the_server_restarted_between_calls(
    stack: Stack, mcp1_factory: Callable[..., Mcp1Peer]
) -> None:
    peer = mcp1_factory()
    stack.register("restarts-between", peer)
    caller = stack.caller()
    first = caller.finished(caller.start("restarts-between", "echo", {"text": "one"})["id"])
    assert (first["status"], result_text(first)) == ("completed", "echo: one")
    before = peer.sessions()
    assert before["active"] == 0 and before["opened"] == before["closed"] >= 1
    peer.stop()
    again = mcp1_factory(port=peer.port)
    second = caller.finished(caller.start("restarts-between", "echo", {"text": "two"})["id"])
    assert (second["status"], result_text(second)) == ("completed", "echo: two")
    after = again.sessions()
    # The call opened a session of the new process, and closed it; a session id it never
    # issued (an old one) is answered 404, which makes a client open a new one.
    assert after["opened"] == after["closed"] >= 1 and after["active"] == 0
    with httpx.Client(timeout=5) as raw:
        stale = raw.post(
            again.url,
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={
                "Mcp-Session-Id": "gone-after-restart",
                "Accept": "application/json, text/event-stream",
            },
        )
    assert stale.status_code == 404
