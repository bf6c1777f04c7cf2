"""Links in emails point where the site is served: MRTRWEB_BASE_URL, else ``make run``'s
HOST and PORT."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from mrtrweb import env

BASE_DIR = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({}, "http://127.0.0.1:8000"),
        ({"PORT": "8080"}, "http://127.0.0.1:8080"),
        ({"HOST": "localhost", "PORT": "9001"}, "http://localhost:9001"),
        ({"HOST": "0.0.0.0"}, "http://127.0.0.1:8000"),
        ({"HOST": "::"}, "http://[::1]:8000"),
        ({"HOST": "::1", "PORT": "8001"}, "http://[::1]:8001"),
        (
            {"MRTRWEB_BASE_URL": "https://mrtr.example.com/", "PORT": "8080"},
            "https://mrtr.example.com",
        ),
        ({"MRTRWEB_BASE_URL": " ", "PORT": "8081"}, "http://127.0.0.1:8081"),
    ],
)
def test_base_url(environ: dict[str, str], expected: str) -> None:
    assert env.base_url(environ) == expected


def test_a_port_that_is_not_a_number_is_an_error() -> None:
    with pytest.raises(env.EnvError, match="PORT"):
        env.base_url({"PORT": "eighty"})


@pytest.mark.parametrize(
    ("args", "expected"), [([], "127.0.0.1 8000"), (["PORT=8123"], "127.0.0.1 8123")]
)
def test_make_passes_host_and_port_to_what_it_runs(args: list[str], expected: str) -> None:
    # A rule of our own beside the Makefile's: what its recipes (uvicorn, manage.py) see.
    probe = 'show-env:\n\t@echo "$$HOST $$PORT"\n'
    environ = {"PATH": "/usr/bin:/bin"}
    result = subprocess.run(
        ["make", "-s", "-f", "Makefile", "-f", "-", "show-env", *args],
        input=probe,
        cwd=BASE_DIR,
        env=environ,
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.strip() == expected


def test_the_settings_read_it(run_python: Any) -> None:
    out = run_python(
        "-c",
        "import django; django.setup(); "
        "from django.conf import settings; print(settings.MRTRWEB_BASE_URL)",
        env={"PORT": "8765", "HOST": "", "MRTRWEB_BASE_URL": ""},
    )
    assert out.stdout.strip() == "http://127.0.0.1:8765", out.stderr
