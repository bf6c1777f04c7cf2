"""Python run inside a served app (``manage.py shell -c``) that reports by printing one line
of JSON last: the way the tests against a real database of their own (PostgreSQL) set up and
read back rows in the app's own process."""

from __future__ import annotations

import json
from typing import Any

from tests.support.processes import ServedApp

__all__ = ["shell_json"]


def shell_json(app: ServedApp, code: str, *, timeout: float = 120) -> Any:
    """Run ``code`` with the app's environment; the JSON of the last line it printed."""
    return json.loads(app.shell(code, timeout=timeout).strip().splitlines()[-1])
