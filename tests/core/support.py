"""Helpers for the tests of the project skeleton."""

import os
import secrets
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parents[2]
# Variables the settings read; a child process starts without them unless a test sets them.
SETTINGS_VARIABLES = ("DATABASE_URL", "REDIS_URL", "MRTRWEB_VAR_DIR")

RunPython = Callable[..., subprocess.CompletedProcess[str]]


def strong_secret_key() -> str:
    return secrets.token_urlsafe(64)


def child_environment(tmp_path: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """An environment for a fresh process of the project that keeps its database, key and
    static files under ``tmp_path``: settings are read once per process, so a different
    environment needs a new process."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("DJANGO_") and k not in SETTINGS_VARIABLES
    }
    env.update(
        DJANGO_SETTINGS_MODULE="mrtrweb.settings",
        MRTRWEB_VAR_DIR=str(tmp_path / "var"),
        DJANGO_STATIC_ROOT=str(tmp_path / "staticfiles"),
    )
    env.update(extra or {})
    return env


def python_runner(tmp_path: Path) -> RunPython:
    """Run ``python ARGS`` from the project root with :func:`child_environment`."""

    def run(*args: str, env: Mapping[str, str] | None = None, timeout: float = 60):
        return subprocess.run(
            [sys.executable, *args],
            cwd=BASE_DIR,
            env=child_environment(tmp_path, env),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    return run
