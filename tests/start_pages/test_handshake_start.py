"""A handshake-era server (mcp 1.x FastMCP) through the pages: start page → result page."""

from __future__ import annotations

from typing import Any

import pytest

from mrtrweb.calls import engine
from mrtrweb.servers.models import Connection
from tests.calls.pages.client import Pages, only_call, start_tool, start_url, visible_text
from tests.peers.mcp1 import Mcp1Peer

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _inline_tasks(inline_tasks: None) -> None:
    """Every test here delivers the call inline."""


def test_a_plain_tool_runs_from_the_start_page_to_its_result(
    pages: Pages, mcp1_peer: Mcp1Peer
) -> None:
    conn = Connection.objects.create(name="mcp1", title="Old server", url=mcp1_peer.url)
    before = mcp1_peer.sessions()
    page = visible_text(pages.get(start_url(conn)))
    assert "speaks MCP 2025-11-25, the older handshake era" in page
    assert "ask_twice" in page and "greet" in page

    response = start_tool(pages, conn, "echo", text="from the page")
    call = only_call()
    assert response["Location"] == call.get_absolute_url()
    assert call.status == call.Status.COMPLETED, call.error
    assert "echo: from the page" in visible_text(pages.get(call.get_absolute_url()))
    after = mcp1_peer.sessions()
    assert after["closed"] - before["closed"] == after["opened"] - before["opened"]
    assert after["active"] == before["active"]


def test_a_tool_that_asks_leads_to_its_round(pages: Pages, mcp1_peer: Mcp1Peer) -> None:
    conn = Connection.objects.create(name="mcp1-asks", url=mcp1_peer.url)
    pages.get(start_url(conn))
    response = start_tool(pages, conn, "ask_twice")
    call: Any = only_call()
    assert call.status == call.Status.WAITING, call.error
    round = call.rounds.get()
    assert response["Location"] == round.get_absolute_url()
    assert "What is your name?" in visible_text(pages.get(round.get_absolute_url()))
    # The call's conversation holds the server's stream: ended here, not left running.
    engine.cancel_round(round, call.started_by)
    assert engine.wait_idle(10.0)
