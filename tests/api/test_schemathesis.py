"""Schemathesis fuzzes the served API from its own OpenAPI document: no 5xx, and every
response matches the documented status codes, media types and schemas.

Bounded: a few examples per operation (``MAX_EXAMPLES``) from a fixed seed, so each run
takes well under 90 s (about 20 s here). To explore further, set
``MRTRWEB_SCHEMATHESIS_EXAMPLES`` and ``MRTRWEB_SCHEMATHESIS_SEED``.

No task worker runs beside this app, so a fuzzed webhook URL is never called; the operator's
run leaves out the connection test, which would dial fuzzed URLs.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.api.live import ApiApp, serve

MAX_EXAMPLES = os.environ.get("MRTRWEB_SCHEMATHESIS_EXAMPLES", "12")
CHECKS = ",".join(
    [
        "not_a_server_error",
        "status_code_conformance",
        "content_type_conformance",
        "response_schema_conformance",
    ]
)


@pytest.fixture(scope="module")
def live(fastmcp_process_peer: Any) -> Iterator[ApiApp]:
    yield from serve(fastmcp_process_peer, worker=False)


def _schemathesis(live: ApiApp, token: str, *extra: str, tmp_path: Path) -> None:
    command = [
        str(Path(sys.executable).with_name("schemathesis")),
        "run",
        f"{live.base_url}/api/v1/openapi.json",
        "--url",
        f"{live.base_url}/api/v1",
        "--header",
        f"Authorization: Bearer {token}",
        "--checks",
        CHECKS,
        "--max-examples",
        MAX_EXAMPLES,
        "--phases",
        "examples,coverage,fuzzing",
        # One worker: hypothesis' lambda descriptions call ast.parse, which CPython 3.11
        # can fail with "AST constructor recursion depth mismatch" when run in threads.
        "--workers",
        "1",
        "--request-timeout",
        "70",
        "--seed",
        os.environ.get("MRTRWEB_SCHEMATHESIS_SEED", "20261130"),
        "--generation-database",
        "none",
        "--no-color",
        "--report-dir",
        str(tmp_path),
        *extra,
    ]
    # Run from the temporary directory: schemathesis keeps a cache in its working directory.
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=85, check=False, cwd=tmp_path
    )
    live.check_alive()
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]


def test_no_operation_answers_5xx_or_off_schema(live: ApiApp, tmp_path: Path) -> None:
    _schemathesis(live, live.token, tmp_path=tmp_path)


def test_the_operators_endpoints_too(live: ApiApp, tmp_path: Path) -> None:
    _schemathesis(
        live,
        live.operator_token,
        "--include-path-regex",
        "^/servers",
        "--exclude-operation-id",
        "testServer",
        tmp_path=tmp_path,
    )
