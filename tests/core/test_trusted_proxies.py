"""Whose X-Forwarded-For is believed: only the proxies of MRTRWEB_TRUSTED_PROXIES, none by
default. Against a real uvicorn started as ``make run`` starts it, so the sign-in limit per
address counts the address the connection really came from."""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from mrtrweb.env import EnvError, trusted_proxies, uvicorn_proxy_flags
from tests.support.processes import (
    REPO_ROOT,
    ServedApp,
    app_environment,
    start_uvicorn,
    wait_until_served,
)
from tests.support.web import csrf_token

LIMIT = 5  # MRTRWEB_SIGNIN_FAILURE_LIMIT's default: the fifth failure is answered "paused"


@pytest.fixture
def serve() -> Iterator[Callable[..., ServedApp]]:
    started: list[ServedApp] = []

    def start(**env: str) -> ServedApp:
        root = Path(tempfile.mkdtemp(prefix="mrtrweb-proxies-"))
        app = ServedApp(root=root, env=app_environment(root, **env))
        started.append(app)
        app.migrate()
        app.pick_port()
        start_uvicorn(app, port=app.port, lifespan=False)
        wait_until_served(app)
        return app

    yield start
    for app in started:
        app.stop()
        shutil.rmtree(app.root, ignore_errors=True)


def try_to_sign_in(app: ServedApp, username: str, forwarded_for: str) -> httpx.Response:
    """A wrong password for ``username`` from this host, claiming to come from elsewhere."""
    with httpx.Client(base_url=app.base_url, timeout=30) as browser:
        page = browser.get("/accounts/login/")
        return browser.post(
            "/accounts/login/",
            data={
                "username": username,
                "password": "not-the-password",
                "csrfmiddlewaretoken": csrf_token(page.text),
            },
            headers={"X-Forwarded-For": forwarded_for},
        )


def paused(response: httpx.Response) -> bool:
    return response.status_code == 429 and "Signing in is paused" in response.text


def test_by_default_a_client_on_this_host_cannot_choose_its_address(
    serve: Callable[..., ServedApp],
) -> None:
    app = serve()
    # Each try on another account and "from" another address: all of them from 127.0.0.1.
    for i in range(LIMIT - 1):
        assert not paused(try_to_sign_in(app, f"guess{i}", f"198.51.100.{i + 1}"))
    assert paused(try_to_sign_in(app, "guess-more", "203.0.113.77"))


def test_a_trusted_proxy_s_forwarded_address_is_the_one_counted(
    serve: Callable[..., ServedApp],
) -> None:
    app = serve(MRTRWEB_TRUSTED_PROXIES="127.0.0.1")
    for i in range(LIMIT - 1):
        assert not paused(try_to_sign_in(app, f"guess{i}", "198.51.100.7"))
    assert paused(try_to_sign_in(app, "guess-more", "198.51.100.7"))
    # Another client behind the same proxy is not held back by the first one's tries.
    assert not paused(try_to_sign_in(app, "someone", "203.0.113.9"))


def test_the_setting_is_read_strictly() -> None:
    assert trusted_proxies({}) == [] and trusted_proxies({"MRTRWEB_TRUSTED_PROXIES": ""}) == []
    assert uvicorn_proxy_flags({}) == ["--no-proxy-headers"]
    proxies = {"MRTRWEB_TRUSTED_PROXIES": "10.0.0.2, 10.1.0.0/16,::1"}
    assert uvicorn_proxy_flags(proxies) == [
        "--proxy-headers",
        "--forwarded-allow-ips=10.0.0.2,10.1.0.0/16,::1",
    ]
    for wrong in ("proxy.example.com", "*", "10.0.0.300"):
        with pytest.raises(EnvError, match="MRTRWEB_TRUSTED_PROXIES"):
            trusted_proxies({"MRTRWEB_TRUSTED_PROXIES": wrong})


def test_make_run_passes_the_flags_to_uvicorn() -> None:
    recipe = (REPO_ROOT / "Makefile").read_text().split("\nrun:", 1)[1].split("\n\n", 1)[0]
    (uvicorn,) = [line for line in recipe.splitlines() if "bin/uvicorn" in line]
    assert uvicorn.rstrip().endswith("$$proxies")
    assert re.search(r"proxies=\$\$\(.*uvicorn_proxy_flags\(os\.environ\).*\) \|\| exit 1", recipe)
