"""Shared by the handshake-era tests through real processes (tests/*/test_handshake*.py): the
handshake-era peers registered as connections, and a caller of the JSON API over HTTP that
follows a call from round to round.

A handshake-era question is a round like any other: ``inputRequests`` holds the one
``elicitation/create`` the server sent, under a key of mrtrweb's choosing (read from the
round, never assumed).
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.peers.mcp1 import Mcp1Peer

# Tools of both peers (tests/peers/mcp1_server.py, tests/peers/ts_server.cjs).
TOOLS = ("echo", "ask_twice", "url_question", "progress_then_ask")
# How many times ``?wait=`` is asked before a test gives up on a call moving on (a bound).
WAITS = 12

# Connections named after the peers, tested (end users are offered only tested ones), no
# authentication, every question tool exposed to end users; printed back as JSON.
SEED = """
import json
from django.utils import timezone
from mrtrweb.servers.models import Connection, ToolExposure
made = {{}}
for name, url in {peers!r}.items():
    conn, _ = Connection.objects.update_or_create(
        name=name,
        defaults=dict(url=url, title=name + " server", auth="none", tested_at=timezone.now()),
    )
    for tool in {tools!r}:
        ToolExposure.objects.update_or_create(
            connection=conn, tool_name=tool, defaults={{"exposed": True}}
        )
    made[name] = conn.pk
print(json.dumps(made))
"""


def seed_code(peers: dict[str, Mcp1Peer]) -> str:
    return SEED.format(peers={name: peer.url for name, peer in peers.items()}, tools=TOOLS)


class Caller:
    """A program using the JSON API of one web process with a bearer token."""

    def __init__(self, base_url: str, token: str) -> None:
        self.base_url = base_url
        self.http = httpx.Client(
            base_url=base_url + "/api/v1",
            headers={"Authorization": f"Bearer {token}"},
            timeout=90.0,
        )

    def start(self, server: str, tool: str, arguments: dict[str, Any] | None = None) -> dict:
        response = self.http.post(
            "/calls", json={"server": server, "name": tool, "arguments": arguments or {}}
        )
        assert response.status_code == 201, response.text
        return response.json()

    def call(self, call_id: int, wait: float = 0) -> dict:
        response = self.http.get(f"/calls/{call_id}", params={"wait": wait} if wait else {})
        assert response.status_code == 200, response.text
        return response.json()

    def next_round(self, call: dict, after: int = 0) -> dict | None:
        """The call's next pending round with an index above ``after``, waiting for it; None
        once the call finished without one."""
        for _ in range(WAITS):
            pending = [r for r in call["rounds"] if r["status"] == "pending" and r["index"] > after]
            if pending:
                return pending[0]
            if call["finished"]:
                return None
            call = self.call(call["id"], wait=10)
        raise AssertionError(f"call {call['id']} neither asked again nor finished: {call}")

    def finished(self, call_id: int) -> dict:
        call = self.call(call_id)
        for _ in range(WAITS):
            if call["finished"]:
                return call
            call = self.call(call_id, wait=10)
        raise AssertionError(f"call {call_id} did not finish: {json.dumps(call)[:2000]}")

    def answer(self, round_: dict, action: str, content: dict[str, Any] | None = None) -> Any:
        (key,) = round_["inputRequests"]
        answer: dict[str, Any] = {"action": action}
        if content is not None:
            answer["content"] = content
        return self.http.post(
            f"/rounds/{round_['id']}/responses", json={"responses": {key: answer}}
        )

    def close(self) -> None:
        self.http.close()


def request_of(round_: dict) -> dict:
    """The one ``elicitation/create`` a handshake-era round holds."""
    (request,) = round_["inputRequests"].values()
    assert request["method"] == "elicitation/create", request
    return request


def result_text(call: dict) -> str:
    result = call["result"] or {}
    return " ".join(b.get("text", "") for b in result.get("content", []) if b.get("type") == "text")
