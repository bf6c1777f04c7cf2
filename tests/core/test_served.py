"""The ASGI app as `make run` serves it: uvicorn, channels' router, WhiteNoise and the
collected static files, with DEBUG off."""

import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.core.support import BASE_DIR, RunPython, child_environment


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def served(run_python: RunPython, tmp_path: Path) -> Iterator[str]:
    collected = run_python("manage.py", "collectstatic", "--noinput", "-v0", timeout=120)
    assert collected.returncode == 0, collected.stderr
    port = free_port()
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "uvicorn", "mrtrweb.asgi:application"),
            *("--host", "127.0.0.1", "--port", str(port), "--lifespan", "off"),
        ],
        cwd=BASE_DIR,
        env=child_environment(tmp_path),
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, "uvicorn exited"
            try:
                httpx.get(f"{base}/healthz", timeout=1)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "uvicorn did not start"
                time.sleep(0.1)
        yield base
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_home_page_and_its_static_files_are_served(served: str):
    with httpx.Client(base_url=served, timeout=10) as http:
        assert http.get("/healthz").text == "ok"
        home = http.get("/")
        assert home.status_code == 200
        assert "An MCP client for people" in home.text

        # Collected files have content hashes in their names and are cached for long.
        stylesheet = re.search(r'href="(/static/mrtrweb/site\.[0-9a-f]{12}\.css)"', home.text)
        assert stylesheet, home.text
        css = http.get(stylesheet.group(1), headers={"Accept-Encoding": "gzip"})
        assert css.status_code == 200
        assert ".nav" in css.text
        assert "immutable" in css.headers["Cache-Control"]

        assert http.get("/no-such-page").status_code == 404
