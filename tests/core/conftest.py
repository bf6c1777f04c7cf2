from pathlib import Path

import pytest

from tests.core.support import RunPython, python_runner


@pytest.fixture
def run_python(tmp_path: Path) -> RunPython:
    return python_runner(tmp_path)
