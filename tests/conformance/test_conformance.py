"""The official MCP conformance suite, run against ``manage.py mcp_conformance_client``.

Each scenario starts the suite's mock server, runs our command against it and judges what the
command sent. docs/conformance.md says what every scenario demands. ``make test`` installs
Node 22 and the suite into var/node; without them these tests fail (they never skip).

The ``auth/*`` scenarios put an OAuth authorization server in front of the mock; the command
authorizes headless (mrtrweb.oauth). The client-credentials scenarios belong to an extension,
not to the spec's timeline: the suite runs them only when forced, and then at the 2026-07-28
wire we ask for. The checks passed are totalled at the end of the session (conftest.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conformance.conftest import CHECK_TOTALS

REPO = Path(__file__).resolve().parents[2]
NODE_DIR = REPO / "var" / "node" / "node_modules"
NODE_BIN = NODE_DIR / "node" / "bin"
CONFORMANCE = NODE_DIR / ".bin" / "conformance"
SPEC_VERSION = "2026-07-28"
INSTALL_HINT = (
    "run `make test` (it installs them), or: npm install --prefix var/node "
    "node@22 @modelcontextprotocol/conformance@0.2.0-alpha.12"
)

CORE_SCENARIOS = [
    "tools_call",
    "request-metadata",
    "sep-2322-client-request-state",
    "http-standard-headers",
    "http-custom-headers",
    "http-invalid-tool-headers",
    "json-schema-ref-no-deref",
    "json-schema-2020-12-preservation",
    # Handshake-era scenarios: run at their own spec version (SPEC_VERSIONS).
    "initialize",
    "elicitation-sep1034-client-defaults",
    "sse-retry",
]
# Scenarios judged at another spec version than SPEC_VERSION (the suite skips a scenario
# outside its versions): the handshake era's, which 2026-07-28 removed.
SPEC_VERSIONS = {
    "initialize": "2025-11-25",
    "elicitation-sep1034-client-defaults": "2025-11-25",
    "sse-retry": "2025-11-25",
}
# Every auth/* client scenario of the suite for 2026-07-28 (`conformance list --client`).
AUTH_SCENARIOS = [
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/pre-registration",
    "auth/resource-mismatch",
    "auth/offline-access-scope",
    "auth/offline-access-not-supported",
    "auth/authorization-server-migration",
    "auth/iss-supported",
    "auth/iss-not-advertised",
    "auth/iss-supported-missing",
    "auth/iss-wrong-issuer",
    "auth/iss-unexpected",
    "auth/iss-normalized",
    "auth/metadata-issuer-mismatch",
]
# The OAuth client-credentials extension (SEP-1046): run with --force at our wire version.
EXTENSION_SCENARIOS = [
    "auth/client-credentials-basic",
    "auth/client-credentials-jwt",
]
SCENARIOS = [*CORE_SCENARIOS, *AUTH_SCENARIOS, *EXTENSION_SCENARIOS]

# Checks that may end other than SUCCESS, keyed by (scenario, check id, check name), each with
# the statuses allowed and why. Everything else must be SUCCESS (or INFO, which judges nothing).
EXPECTED_NOT_SUCCESS: dict[tuple[str, str, str], frozenset[str]] = {
    # Deprecated capabilities we never declare; the suite only validates them when present.
    (
        "request-metadata",
        "sep-2575-client-declares-roots-capability",
        "ClientDeclaresRootsCapability",
    ): frozenset({"SKIPPED"}),
    (
        "request-metadata",
        "sep-2575-client-declares-sampling-capability",
        "ClientDeclaresSamplingCapability",
    ): frozenset({"SKIPPED"}),
    # The handshake does not exist in 2026-07-28, so these methods are never sent.
    (
        "http-standard-headers",
        "sep-2243-client-includes-standard-headers",
        "ClientMcpMethodHeader_initialize",
    ): frozenset({"SKIPPED"}),
    (
        "http-standard-headers",
        "sep-2243-client-includes-standard-headers",
        "ClientMcpMethodHeader_notifications_initialized",
    ): frozenset({"SKIPPED"}),
}


def client_python() -> Path:
    # Not resolved: the venv's python is a symlink, and following it would leave the venv.
    venv_python = REPO / ".venv" / "bin" / "python"
    return venv_python if venv_python.exists() else Path(sys.executable)


def require_tools() -> None:
    missing = [str(p) for p in (NODE_BIN / "node", CONFORMANCE) if not p.exists()]
    if missing:
        pytest.fail(f"Node tools missing ({', '.join(missing)}): {INSTALL_HINT}", pytrace=False)


def client_command() -> str:
    parts = [str(client_python()), str(REPO / "manage.py"), "mcp_conformance_client"]
    # The suite splits --command on spaces and runs it through a shell.
    unsafe = [p for p in parts if any(c in p for c in " \t'\"$`;&|<>()")]
    if unsafe:
        pytest.fail(f"paths unusable in the suite's --command: {unsafe}", pytrace=False)
    return " ".join(parts)


# Statuses that judge nothing: the auth scenarios log every request and answer as INFO.
NOT_JUDGED = frozenset({"SUCCESS", "INFO"})


def unexpected(scenario: str, checks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        check
        for check in checks
        if check.get("status") not in NOT_JUDGED
        and check.get("status")
        not in EXPECTED_NOT_SUCCESS.get(
            (scenario, check.get("id", ""), check.get("name", "")), frozenset()
        )
    ]


def describe(check: dict[str, Any]) -> str:
    details = json.dumps(check.get("details"), ensure_ascii=False)[:600]
    return (
        f"- {check.get('status')} {check.get('id')} / {check.get('name')}: "
        f"{check.get('errorMessage') or check.get('description')}\n  details: {details}"
    )


def counted(checks: list[dict[str, Any]]) -> tuple[int, int]:
    """(passed, judged) as the suite prints them: SUCCESS of SUCCESS, FAILURE and WARNING
    (the suite fails a run on warnings too); INFO and SKIPPED are not judged."""
    judged = [c for c in checks if c.get("status") in ("SUCCESS", "FAILURE", "WARNING")]
    return sum(c.get("status") == "SUCCESS" for c in judged), len(judged)


@pytest.mark.conformance
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_scenario(scenario: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    require_tools()
    results = tmp_path / "results"
    env = {**os.environ, "PATH": f"{NODE_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    run = subprocess.run(
        [
            str(CONFORMANCE),
            "client",
            "--command",
            client_command(),
            "--scenario",
            scenario,
            "--spec-version",
            SPEC_VERSIONS.get(scenario, SPEC_VERSION),
            "--output-dir",
            str(results),
            # Headroom over the default 30 s for a busy machine; a normal run takes ~3 s.
            "--timeout",
            "60000",
            *(["--force"] if scenario in EXTENSION_SCENARIOS else []),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=100,
    )
    output = (
        f"exit {run.returncode}\n--- stdout\n{run.stdout[-3000:]}\n--- stderr\n{run.stderr[-3000:]}"
    )
    files = sorted(results.glob("**/checks.json"))
    assert files, f"the suite wrote no checks.json\n{output}"
    checks = [check for path in files for check in json.loads(path.read_text())]
    assert checks, f"the suite recorded no checks\n{output}"
    passed, judged = counted(checks)
    request.config.stash.setdefault(CHECK_TOTALS, {})[scenario] = (passed, judged)
    bad = unexpected(scenario, checks)
    client_log = "\n".join(
        f"--- {path.parent.name}/stderr.txt\n{(path.parent / 'stderr.txt').read_text()[-3000:]}"
        for path in files
        if (path.parent / "stderr.txt").exists()
    )
    assert not bad, (
        f"{len(bad)} of {len(checks)} checks failed:\n"
        + "\n".join(describe(c) for c in bad)
        + f"\n{client_log}\n{output}"
    )
    assert run.returncode == 0, f"the suite failed the run\n{client_log}\n{output}"
