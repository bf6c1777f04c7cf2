"""The conformance command against a real fastmcp server (``tests.peers``), without Node."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from mrtrweb.core.management.commands import mcp_conformance_client as cmd
from mrtrweb.mcp import ConnectionSettings, MCPClient


async def run_steps(url: str, *steps: cmd.Step) -> tuple[list[str], list[str]]:
    lines: list[str] = []
    settings = ConnectionSettings(url=url, capabilities=cmd.CAPABILITIES)
    async with MCPClient(settings) as client:
        runner = cmd.Runner(client, lines.append)
        await runner.run(steps)
    return runner.errors, lines


def test_the_generic_flow_succeeds(fastmcp_peer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(cmd.SCENARIO_ENV, raising=False)
    out, err = io.StringIO(), io.StringIO()
    call_command("mcp_conformance_client", fastmcp_peer.url, stdout=out, stderr=err)
    assert "scenario (generic): done" in out.getvalue()
    assert "tools/call " in err.getvalue()


async def test_form_answers_pass_the_servers_schema_validation(fastmcp_peer) -> None:
    # The server checks the accepted content against its requestedSchema, one field per kind.
    errors, lines = await run_steps(
        fastmcp_peer.url, cmd.ListTools(), cmd.CallTool("all_field_kinds")
    )
    assert errors == []
    outcome = next(line for line in lines if line.startswith("tools/call all_field_kinds"))
    assert "after 2 rounds" in outcome
    assert json.loads(outcome.split(": ", 1)[1])["action"] == "accept"


async def test_a_call_between_rounds_carries_no_round_data(fastmcp_peer) -> None:
    since = fastmcp_peer.mark()
    errors, _ = await run_steps(
        fastmcp_peer.url,
        cmd.ListTools(),
        cmd.CallTool("stateless_confirm", {}, between_rounds="echo"),
    )
    assert errors == []
    calls = [
        (entry["json"]["params"]["name"], entry["json"]["params"])
        for entry in fastmcp_peer.recorded(since)
        if entry["json"] and entry["json"].get("method") == "tools/call"
    ]
    assert [name for name, _ in calls] == ["stateless_confirm", "echo", "stateless_confirm"]
    echo = calls[1][1]
    assert "inputResponses" not in echo
    assert "requestState" not in echo
    assert calls[2][1]["inputResponses"]["confirm"]["action"] == "accept"
