"""`make test-fast` leaves out the modules tests/conftest.py names as long suites: a name
that no longer points at a file (a test module moved) would quietly put its suite back in
the inner loop."""

from pathlib import Path

from tests.conftest import LONG_SUITES

ROOT = Path(__file__).resolve().parents[2]


def test_every_long_suite_names_a_module_or_folder_that_exists() -> None:
    missing = [suite for suite in LONG_SUITES if not (ROOT / suite).exists()]
    assert missing == []
