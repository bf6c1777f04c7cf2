"""Probing a handshake-era server (mcp 1.x FastMCP): its catalog listed, its era said, every
session it opened closed."""

from __future__ import annotations

from typing import Any

import pytest

from mrtrweb.servers.catalog import refresh_catalog
from mrtrweb.servers.models import Connection
from mrtrweb.servers.probe import probe_summary
from tests.peers.mcp1 import Mcp1Peer
from tests.support.factories import make_connection

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("stateless", [False, True])
def test_the_probe_lists_the_catalog_and_closes_what_it_opened(
    mcp1_peer: Mcp1Peer, mcp1_stateless_peer: Mcp1Peer, stateless: bool
) -> None:
    peer = mcp1_stateless_peer if stateless else mcp1_peer
    conn = make_connection(peer, name="stateless" if stateless else "stateful")
    before = peer.sessions()
    report = refresh_catalog(conn)
    assert report.ok, report.error
    assert report.era == "legacy"
    conn.refresh_from_db()
    assert conn.era == Connection.Era.LEGACY
    assert [t["name"] for t in conn.catalog["tools"]][:2] == ["echo", "ask_twice"]
    assert [p["name"] for p in conn.catalog["prompts"]] == ["greet"]
    assert [r["uri"] for r in conn.catalog["resources"]] == ["peer://readme"]
    summary: dict[str, Any] = probe_summary(report, conn)
    assert summary["ok"] and summary["era"] == "legacy"
    assert summary["protocol_version"] == "2025-11-25"
    assert summary["name"] == "mrtrweb-mcp1-peer"
    after = peer.sessions()
    assert after["closed"] - before["closed"] == after["opened"] - before["opened"]
    assert after["active"] == before["active"]
    if not stateless:
        # One session: the era is found by a refused 2026-07-28 request, which opens none.
        assert after["opened"] - before["opened"] == 1


def test_a_second_probe_knows_the_era_and_opens_one_session(mcp1_peer: Mcp1Peer) -> None:
    conn = make_connection(mcp1_peer, name="known", era=Connection.Era.LEGACY)
    refresh_catalog(conn)
    before = mcp1_peer.sessions()
    seen = len(mcp1_peer.requests())
    assert refresh_catalog(conn).ok
    after = mcp1_peer.sessions()
    assert after["opened"] - before["opened"] == 1
    assert after["closed"] - before["closed"] == 1
    rpcs = [r["rpc"] for r in mcp1_peer.requests()[seen:] if r["http"] == "POST"]
    assert rpcs[0] == "initialize"
