"""A handshake-era call across two web processes: started through web process A (which holds
the server's stream, so owns the call), its rounds answered through the API of web process B.
The answers reach A through the database and go back on A's stream exactly once: the server
(tests/peers/mcp1_server.py) counts every answer it receives."""

from __future__ import annotations

from tests.api.handshake_live import Caller, request_of, result_text, seed_code
from tests.peers.mcp1 import Mcp1Peer
from tests.scaleout.conftest import CALLER, Topology
from tests.support.app_shell import shell_json

_TOKEN = """
from django.contrib.auth import get_user_model
from mrtrweb.api.models import ApiToken
print(ApiToken.issue(get_user_model().objects.get(username={name!r}), "tests")[1])
"""


def test_started_on_a_answered_on_b_sent_once_by_a(topology: Topology, mcp1_peer: Mcp1Peer) -> None:
    app = topology.app
    shell_json(app, seed_code({"old-mcp1": mcp1_peer}), timeout=60)
    token = app.shell(_TOKEN.format(name=CALLER[0])).split()[-1]
    on_a, on_b = Caller(topology.url_a, token), Caller(topology.url_b, token)
    seen = len(mcp1_peer.answers())
    before = mcp1_peer.sessions()
    try:
        call = on_a.start("old-mcp1", "ask_twice")
        first = on_b.next_round(on_b.call(call["id"]))
        assert first is not None, call
        assert on_b.answer(first, "accept", {"name": "Sam"}).status_code == 202
        second = on_b.next_round(on_b.call(call["id"]), after=first["index"])
        assert second is not None
        assert request_of(second)["params"]["message"] == "Hello Sam: your favourite colour?"
        # A second answer through the other process loses: 409, nothing more is sent.
        assert on_b.answer(second, "accept", {"color": "red"}).status_code == 202
        assert on_a.answer(second, "accept", {"color": "blue"}).status_code == 409
        done = on_a.finished(call["id"])
    finally:
        on_a.close()
        on_b.close()
    assert (done["status"], result_text(done)) == ("completed", "Sam likes red")
    sent = [(a["id"], a["action"]) for a in mcp1_peer.answers()[seen:]]
    assert [action for _, action in sent] == ["accept", "accept"]
    assert len({rid for rid, _ in sent}) == 2
    after = mcp1_peer.sessions()
    assert after["active"] == before["active"]
    assert after["opened"] - before["opened"] == after["closed"] - before["closed"] >= 1
    topology.check_alive()
    # B took the answers; only A, which holds the stream, sent them to the server.
    kinds = {
        name: [e["kind"] for e in topology.events(name, call["id"])]
        for name in ("web_a", "web_b", "worker")
    }
    assert "answered" in kinds["web_b"], kinds
    assert "delivered" not in kinds["web_b"] + kinds["worker"], kinds
