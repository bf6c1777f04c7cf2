"""The API served by uvicorn: the example script from docs/api.md against a person answering
in the browser, and a waiting request that holds no worker thread."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from mrtrweb.elicitation import field_name_for, prefix_for_key
from tests.api.live import PERSON, ApiApp, serve
from tests.support.services import scratch_postgres

REPO_ROOT = Path(__file__).resolve().parents[2]
SCRIPT = REPO_ROOT / "docs" / "examples" / "wait_for_answer.py"


@pytest.fixture(scope="module")
def live(fastmcp_process_peer: Any) -> Iterator[ApiApp]:
    yield from serve(fastmcp_process_peer, worker=True, pages=True)


def _csrf(html: str) -> str:
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)[1]


def _answer_in_the_browser(live: ApiApp, round_url: str) -> None:
    """What a person does: sign in, open the round's page, fill the form, submit."""
    with httpx.Client(base_url=live.base_url, follow_redirects=True, timeout=20) as browser:
        login = browser.get("/accounts/login/")
        browser.post(
            "/accounts/login/",
            data={
                "username": PERSON[0],
                "password": PERSON[1],
                "csrfmiddlewaretoken": _csrf(login.text),
            },
            headers={"Referer": str(login.url)},
        ).raise_for_status()
        page = browser.get(round_url)
        assert page.status_code == 200 and "Deploy api" in page.text
        prefix = prefix_for_key("approval")

        def name(prop: str) -> str:
            return f"{prefix}-{field_name_for(prop)}"

        answered = browser.post(
            round_url,
            data={
                "csrfmiddlewaretoken": _csrf(page.text),
                name("approve"): "on",
                name("replicas"): "4",
                name("window"): "1",  # the second option: tonight
                "action": "accept",
            },
            headers={"Referer": round_url},
        )
        assert answered.status_code == 200, answered.text[:500]


def test_the_example_script_prints_the_result_once_a_person_has_answered(live: ApiApp) -> None:
    env = {**os.environ, "MRTR_URL": live.base_url, "MRTR_TOKEN": live.token}
    script = subprocess.Popen(
        [
            sys.executable,
            str(SCRIPT),
            "--server",
            "peer",
            "--tool",
            "approve_deploy",
            "--arguments",
            '{"service": "api", "environment": "prod"}',
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert script.stdout is not None
        started = script.stdout.readline()
        assert started.startswith("Started call "), started + script.stderr.read()
        waiting = script.stdout.readline()
        match = re.fullmatch(r"Waiting for a person to answer: (\S+)\n", waiting)
        assert match, waiting
        round_url = match[1]
        assert round_url.startswith(live.base_url + "/rounds/")
        _answer_in_the_browser(live, round_url)
        out, err = script.communicate(timeout=60)
    finally:
        if script.poll() is None:
            script.kill()
    assert script.returncode == 0, out + err
    assert "The call completed." in out
    assert "Deployed api to prod: 4 replicas, window tonight" in out


def _others_go_on_while_calls_wait(app: ApiApp, waits: int, arguments: dict[str, str]) -> None:
    """``waits`` requests held on a waiting call (``?wait=4``) while three others are served
    at once; then each wait ran its 4 s and the call is cancelled (out of the person's inbox)."""
    headers = {"Authorization": f"Bearer {app.token}"}
    with httpx.Client(base_url=app.base_url + "/api/v1", headers=headers, timeout=30) as api:
        call = api.post(
            "/calls", json={"server": "peer", "name": "approve_deploy", "arguments": arguments}
        ).json()
        assert call["status"] == "waiting"
        took: list[float] = []

        def wait() -> None:
            began = time.monotonic()
            assert api.get(f"/calls/{call['id']}", params={"wait": 4}).status_code == 200
            took.append(time.monotonic() - began)

        waiters = [threading.Thread(target=wait) for _ in range(waits)]
        for waiter in waiters:
            waiter.start()
        time.sleep(0.8)
        for _ in range(3):
            began = time.monotonic()
            assert api.get("/rounds").status_code == 200
            assert time.monotonic() - began < 1.5
        for waiter in waiters:
            waiter.join()
        assert len(took) == waits and all(3.9 <= t < 8 for t in took), took
        assert api.post(f"/calls/{call['id']}/cancel").status_code == 200


def test_a_waiting_request_holds_no_worker_thread(live: ApiApp) -> None:
    # Sync views share one thread under ASGI: were the waits holding it, the others would
    # queue behind them for seconds.
    _others_go_on_while_calls_wait(live, 3, {"service": "x"})


def test_waiting_requests_leave_the_connection_pool_to_the_others(
    fastmcp_process_peer: Any,
) -> None:
    """On PostgreSQL a request's thread keeps its pooled connection until the request ends:
    held waits (more of them than the pool has connections) must hand theirs back between
    looks, or every other request queues for one (calls.handoff.release_connection)."""
    with scratch_postgres("mrtrweb_waits") as url:
        served = serve(
            fastmcp_process_peer,
            worker=False,
            DATABASE_URL=url,
            MRTRWEB_DB_POOL_SIZE="2",
            MRTRWEB_DB_POOL_TIMEOUT="10",
        )
        try:
            # Four waits on a pool of two: were they holding connections, the others would
            # wait for one until the waits ended (4 s).
            _others_go_on_while_calls_wait(next(served), 4, {"service": "pooled"})
        finally:
            served.close()


AXE_JS = REPO_ROOT / "var" / "node" / "node_modules" / "axe-core" / "axe.min.js"
CHROMIUM = Path(os.environ.get("MRTRWEB_CHROMIUM", "/usr/bin/chromium"))


def test_the_token_and_reference_pages_are_accessible(live: ApiApp) -> None:
    """axe-core (WCAG 2.x A/AA) on the pages this app adds, in Debian's Chromium."""
    if not AXE_JS.exists() or not CHROMIUM.exists():
        pytest.fail(f"needs {AXE_JS} (make test installs it) and {CHROMIUM}", pytrace=False)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM),
            args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
        )
        try:
            page = browser.new_page(base_url=live.base_url)
            page.goto("/accounts/login/?next=/account/tokens/")
            page.get_by_label("Username").fill(PERSON[0])
            page.get_by_label("Password").fill(PERSON[1])
            page.get_by_role("button", name="Sign in", exact=True).click()
            page.get_by_label("Name").fill("laptop")
            page.get_by_role("button", name="Make the token").click()
            shown = page.locator("#token-text").inner_text()
            assert shown.startswith("mrtr_")
            problems = {}
            for path in ("/account/tokens/", "/api/v1/docs/"):
                if path != "/account/tokens/":
                    page.goto(path)
                # Evaluated: the CSP refuses an added <script> element as inline.
                page.evaluate(AXE_JS.read_text(encoding="utf-8"))
                found = page.evaluate("axe.run(document)")["violations"]
                problems[path] = [(v["id"], v["help"], v["nodes"][0]["html"][:120]) for v in found]
            assert problems == {"/account/tokens/": [], "/api/v1/docs/": []}
        finally:
            browser.close()
