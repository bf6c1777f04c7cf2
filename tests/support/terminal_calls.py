"""Calls started from a terminal (``manage.py mcp_call``) against a served app, as a person:
how the browser tests put a call or a parked round in place without clicking through a page."""

from __future__ import annotations

import json
from typing import Any

from tests.support.processes import ServedApp

__all__ = ["park_deploy", "start_call"]


def start_call(
    app: ServedApp, server: str, tool: str, arguments: dict[str, Any], *, user: str
) -> dict[str, Any]:
    """Start ``tool`` on connection ``server`` as ``user``; the call as the command prints it."""
    done = app.manage(
        "mcp_call",
        "--server",
        server,
        "--tool",
        tool,
        "--arguments",
        json.dumps(arguments),
        "--user",
        user,
    )
    return json.loads(done.stdout)


def park_deploy(app: ServedApp, server: str, service: str, *, user: str) -> int:
    """Start the peer's ``approve_deploy`` for ``service``; the id of the round it parks."""
    printed = start_call(app, server, "approve_deploy", {"service": service}, user=user)
    assert printed["status"] == "waiting", printed
    return int(printed["round"]["id"])
