"""Prints the fuzz suite's counts at the end of the run, with or without ``-s``.

The hypothesis profile lives in ``support.py`` and is applied per test, so the rest of the
suite keeps hypothesis' defaults.
"""

from __future__ import annotations

from typing import Any

from tests.fuzz.tally import lines


def pytest_terminal_summary(terminalreporter: Any) -> None:
    found = lines()
    if found:
        terminalreporter.section("fuzz counts")
        for line in found:
            terminalreporter.write_line(line)
