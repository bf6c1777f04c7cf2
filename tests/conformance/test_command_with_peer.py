"""The conformance command against real servers without Node: the fastmcp peer of
``tests.peers``, and for the auth scenarios the OAuth peer of ``tests.oauth``."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command

from mrtrweb.core.management.commands import mcp_conformance_client as cmd
from mrtrweb.mcp import ConnectionSettings, MCPClient
from tests.oauth.server import Behaviour, running

REPO = Path(__file__).resolve().parents[2]


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


# -- auth scenarios against the OAuth peer of tests/oauth (real HTTP, no Node) ----------------


def run_command(url: str, scenario: str, context: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    env = {**os.environ, cmd.SCENARIO_ENV: scenario}
    env.pop(cmd.CONTEXT_ENV, None)
    if context is not None:
        env[cmd.CONTEXT_ENV] = json.dumps({"name": scenario, **context})
    return subprocess.run(
        [sys.executable, str(REPO / "manage.py"), "mcp_conformance_client", url],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


def test_an_auth_scenario_authorizes_headless() -> None:
    with running(Behaviour(prm_scopes=["read"])) as peer:
        run = run_command(peer.url, "auth/metadata-default")
        assert run.returncode == 0, run.stderr
        assert "scenario auth/metadata-default: done" in run.stdout
        assert peer.requests_to("/register")[0]["json"]["application_type"] == "native"
        assert peer.requests_to("/authorize")[0]["query"]["scope"] == "read"
        calls = [e for e in peer.requests_to("/mcp") if e["json"]["method"] == "tools/call"]
        assert calls and calls[0]["headers"]["authorization"].startswith("Bearer at-sekret")
    # Nothing it prints carries an issued secret (codes, tokens, the client secret).
    assert "sekret" not in run.stdout + run.stderr


def test_pre_registered_credentials_come_from_the_context() -> None:
    with running(Behaviour(registration=False, auth_methods=["client_secret_basic"])) as peer:
        peer.clients["pre-registered-client"] = {"secret": "pre-registered-sekret"}
        context = {
            "client_id": "pre-registered-client",
            "client_secret": "pre-registered-sekret",
            "issuer": peer.issuer(),
        }
        run = run_command(peer.url, "auth/pre-registration", context)
        assert run.returncode == 0, run.stderr
        (token,) = peer.requests_to("/token")
        assert token["client_auth"] == "client_secret_basic"
    assert "sekret" not in run.stdout + run.stderr


@pytest.mark.parametrize(
    ("behaviour", "words"),
    [
        (Behaviour(iss_mode="wrong"), "mix-up"),
        (Behaviour(prm_resource="https://evil.example.com/mcp"), "refusing to authorize"),
        (Behaviour(metadata_issuer="https://attacker.example.com"), "refusing to use it"),
    ],
)
def test_a_refusal_is_one_clear_line_not_a_traceback(behaviour: Behaviour, words: str) -> None:
    with running(behaviour) as peer:
        run = run_command(peer.url, "auth/iss-wrong-issuer")
        assert not peer.requests_to("/token")
    assert run.returncode == 1
    assert "Traceback" not in run.stderr
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith("CommandError: 1 step(s) failed; the first: authorization:")
    assert words in last
