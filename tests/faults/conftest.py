"""Fault tests with real processes: uvicorn, ``manage.py db_worker`` and a flaky MCP server.

- ``stack`` (module): a fresh database (SQLite in a temp dir, or a fresh PostgreSQL database
  when 127.0.0.1:5432 answers), the web process (uvicorn, without the in-process worker) and
  one ``manage.py db_worker --interval 0.1`` process, as the scale-out setup runs them, plus
  ``tests.peers.faults --mode flaky`` on a fixed port so it can be killed and started again.
  Started, awaited and stopped with tests/support/processes.py.
- ``FAULT_REPORT``: what the scenarios add up; printed at the end of the run (terminal
  summary): rounds attempted, answers lost, duplicate resubmissions, rounds recovered.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from mrtrweb.calls.engine import digests
from tests.peers.fixtures import Peer
from tests.support import second_factor
from tests.support.app_shell import shell_json
from tests.support.processes import (
    REPO_ROOT,
    ServedApp,
    accepts,
    app_environment,
    free_port,
    kill,
    spawn,
    start_db_worker,
    start_uvicorn,
    stop,
    wait_until_served,
)
from tests.support.services import scratch_postgres
from tests.support.web import csrf_token, signed_in_client

PERSON = ("alice", "alice-faults-pw-1")
ADMIN = ("admin", "admin-faults-pw-1")
STATE_KEY = "fault-tests"

FAULT_REPORT: Counter[str] = Counter()
REPORT_LINES: list[str] = []


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not REPORT_LINES and not FAULT_REPORT:
        return
    write = terminalreporter.write_line
    terminalreporter.section("fault report (tests/faults)")
    for line in REPORT_LINES:
        write(line)
    write(
        "TOTAL: rounds attempted {attempted}, answers lost {lost}, duplicate resubmissions "
        "{duplicates}, rounds recovered {recovered}, flagged for an admin {flagged}, "
        "admin resends {admin_resends}, idempotent resends {idempotent_resends}".format(
            **{
                k: FAULT_REPORT.get(k, 0)
                for k in (
                    "attempted",
                    "lost",
                    "duplicates",
                    "recovered",
                    "flagged",
                    "admin_resends",
                    "idempotent_resends",
                )
            }
        )
    )


# -- the flaky MCP server, on a port of its own ---------------------------------------------


@dataclass
class FlakyServer:
    """``tests.peers.faults --mode flaky`` that keeps its port (and state key) across restarts.

    ``handled`` accumulates what every incarnation handled, so a restart loses no evidence.
    """

    port: int
    root: Path
    process: subprocess.Popen[bytes] | None = None
    handled: list[dict[str, Any]] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    @property
    def peer(self) -> Peer:
        assert self.process is not None
        return Peer(url=self.url, process=self.process, port=self.port)

    def start(self) -> None:
        env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), PYTHONUNBUFFERED="1")
        command = [sys.executable, "-m", "tests.peers.faults", "--mode", "flaky"]
        command += ["--port", str(self.port), "--state-key", STATE_KEY]
        self.process = spawn(command, env=env, log=self.root / "flaky.log")
        deadline = time.monotonic() + 30
        while not accepts(self.port):
            assert self.process.poll() is None, (self.root / "flaky.log").read_text()
            assert time.monotonic() < deadline, "the flaky server did not start"
            time.sleep(0.05)

    def collect(self) -> None:
        """Move what the running server recorded into ``handled``."""
        if self.process is None or self.process.poll() is not None:
            return
        self.handled += self.peer.recorded()
        self.peer.clear_recorded()

    def stop(self) -> None:
        self.collect()
        if self.process is not None:
            stop(self.process)
            self.process = None

    def fault(self, fault: str | None, times: int = 1, **extra: Any) -> None:
        httpx.post(
            f"http://127.0.0.1:{self.port}/_peer/fault",
            json={"fault": fault, "times": times, **extra},
            timeout=5,
        ).raise_for_status()

    def resubmissions_by_state(self) -> Counter[str]:
        """How many resubmissions the server handled, per SHA-256 of their requestState."""
        self.collect()
        counts: Counter[str] = Counter()
        for entry in self.handled:
            params = (entry.get("json") or {}).get("params") or {}
            if "inputResponses" in params and isinstance(params.get("requestState"), str):
                counts[hashlib.sha256(params["requestState"].encode()).hexdigest()] += 1
        return counts


# -- the stack ------------------------------------------------------------------------------


@dataclass
class Stack:
    app: ServedApp
    flaky: FlakyServer
    web_client: httpx.Client | None = None

    # processes
    def start_web(self) -> None:
        start_uvicorn(self.app, port=self.app.port, lifespan=True)
        wait_until_served(self.app)

    def start_worker(self) -> None:
        start_db_worker(self.app, interval=0.1)

    @contextlib.contextmanager
    def hand_off(self, *, answer_wait: float) -> Iterator[None]:
        """The web process sends the answers it takes itself (the default outside these
        tests), its answer page waiting up to ``answer_wait`` seconds for the outcome."""
        self._restart_web(MRTRWEB_DELIVER_ON_ANSWER="1", MRTRWEB_ANSWER_WAIT=str(answer_wait))
        try:
            yield
        finally:
            self._restart_web(MRTRWEB_DELIVER_ON_ANSWER="0")

    def _restart_web(self, **env: str) -> None:
        if "web" in self.app.processes:
            self.kill("web")  # nothing is in flight between tests
        self.app.env.update(env)
        self.start_web()

    def kill(self, name: str) -> None:
        """SIGKILL: no cleanup, no graceful shutdown, exactly a crash."""
        kill(self.app.processes.pop(name))

    # the database, read directly (a manage.py process per look would be too slow to catch
    # a delivery in flight); the columns read hold nothing encrypted.
    def rounds(self, ids: list[int]) -> dict[int, dict[str, Any]]:
        listed = ",".join(str(int(i)) for i in ids)
        database_url = self.app.env.get("DATABASE_URL")
        # The requestState's digest, as the audit trail recorded it when the round was parked
        # (compact: read back as hex below).
        digest = (
            "e.detail->>'request_state_sha256'"
            if database_url
            else "json_extract(e.detail, '$.request_state_sha256')"
        )
        sql = (
            f"SELECT r.id, r.status, r.answers, (SELECT {digest} FROM calls_event e "
            "WHERE e.round_id = r.id AND e.kind = 'round_parked'), r.attempts, c.status, "
            "r.delivery_error FROM calls_round r JOIN calls_call c ON c.id = r.call_id "
            f"WHERE r.id IN ({listed})"
        )
        if database_url:
            import psycopg

            with psycopg.connect(database_url.replace("postgres://", "postgresql://")) as db:
                rows = db.execute(sql).fetchall()
        else:
            with contextlib.closing(
                sqlite3.connect(self.app.root / "var" / "db.sqlite3", timeout=20)
            ) as db:
                rows = db.execute(sql).fetchall()
        return {
            row[0]: {
                "status": row[1],
                "answers": json.loads(row[2]) if isinstance(row[2], str) else row[2],
                "sha": digests.shown(row[3]),
                "attempts": row[4],
                "call": row[5],
                "error": row[6],
            }
            for row in rows
        }

    def start_calls(self, tool: str, count: int) -> list[dict[str, Any]]:
        """``count`` calls started as PERSON (in a separate process); their pending rounds."""
        # Arguments differ per call, so every round's requestState is its own.
        tag = uuid.uuid4().hex[:8]
        arguments = (
            "{'path': f'/srv/%s-{i}'}" if tool == "confirm_delete" else "{'name': f'%s-{i}'}"
        )
        arguments = arguments % tag
        code = (
            "import json\n"
            "from django.contrib.auth import get_user_model\n"
            "from mrtrweb.calls import engine\n"
            "from mrtrweb.calls.models import Call\n"
            "from mrtrweb.servers.models import Connection\n"
            "conn = Connection.objects.get(name='flaky')\n"
            f"user = get_user_model().objects.get(username={PERSON[0]!r})\n"
            "out = []\n"
            f"for i in range({count}):\n"
            f"    call = engine.start_call(connection=conn, method=Call.Method.TOOL, "
            f"target={tool!r}, arguments={arguments}, user=user)\n"
            "    r = call.rounds.get()\n"
            "    out.append({'round': r.pk, 'call': call.pk, 'keys': list(r.input_requests)})\n"
            "print(json.dumps(out))\n"
        )
        return shell_json(self.app, code, timeout=60)

    def wait_for(
        self, ids: list[int], statuses: set[str], timeout: float = 60.0
    ) -> dict[int, dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while True:
            rows = self.rounds(ids)
            if all(row["status"] in statuses for row in rows.values()):
                return rows
            if time.monotonic() > deadline:
                raise AssertionError(f"rounds did not reach {statuses}: {rows}")
            time.sleep(0.1)

    # the web, as a person and as an admin
    def client(self, who: tuple[str, str]) -> httpx.Client:
        return signed_in_client(self.app.base_url, *who)

    def answer_form(self, client: httpx.Client, round_id: int) -> dict[str, str]:
        """What the round's form posts for "sure: yes", as the browser would fill it."""
        page = client.get(f"/rounds/{round_id}/")
        assert page.status_code == 200, page.status_code
        names = sorted(set(re.findall(r'name="(q[0-9a-f]{20}-[A-Za-z0-9_-]+)"', page.text)))
        assert names, page.text[:2000]
        data = {name: "on" for name in names}
        data.update(action="accept", csrfmiddlewaretoken=csrf_token(page.text))
        return data

    def answer(self, client: httpx.Client, round_id: int) -> httpx.Response:
        return client.post(f"/rounds/{round_id}/", data=self.answer_form(client, round_id))

    def admin_act(self, client: httpx.Client, action: str, round_id: int) -> httpx.Response:
        page = client.get("/dashboard/rounds/", params={"status": "unknown"})
        assert page.status_code == 200
        assert f'value="{action}:{round_id}"' in page.text
        return client.post(
            "/dashboard/rounds/bulk/",
            data={
                "one": f"{action}:{round_id}",
                "confirmed": "1",
                "csrfmiddlewaretoken": csrf_token(page.text),
            },
        )


# The admin passes two-step sign-in with the harness's authenticator (signed_in_client).
_SETUP = (
    second_factor.ENROL
    + """
from django.contrib.auth import get_user_model
from mrtrweb.servers.catalog import refresh_catalog
from mrtrweb.servers.models import Connection
User = get_user_model()
User.objects.create_user({person!r}, password={person_pw!r})
enrol(User.objects.create_superuser({admin!r}, email="", password={admin_pw!r}))
conn = Connection.objects.create(name="flaky", url={url!r}, connect_timeout=1.0, read_timeout=3.0)
refresh_catalog(conn)
Connection.objects.filter(pk=conn.pk).update(answer_deadline=4.0)
"""
)


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def stack(request: pytest.FixtureRequest) -> Iterator[Stack]:
    root = Path(tempfile.mkdtemp(prefix="mrtrweb-faults-"))
    app = ServedApp(
        root=root,
        env=app_environment(
            root,
            MRTRWEB_INPROCESS_WORKER="0",
            # The worker delivers every answer, so its crashes can be tested; the web
            # process's own deliveries are switched on by the tests of them (hand_off).
            MRTRWEB_DELIVER_ON_ANSWER="0",
            MRTRWEB_DELIVERY_BACKOFF="0.3",
            MRTRWEB_DELIVERY_BACKOFF_MAX="2",
            MRTRWEB_DELIVERY_GRACE="1",
            DJANGO_EMAIL_BACKEND="django.core.mail.backends.console.EmailBackend",
        ),
    )
    flaky = FlakyServer(port=free_port(), root=root)
    stack = Stack(app=app, flaky=flaky)
    # Undone in reverse: processes, the flaky server, the database, the temp dir.
    with contextlib.ExitStack() as cleanup:
        cleanup.callback(shutil.rmtree, root, ignore_errors=True)
        if request.param == "postgresql":
            app.env["DATABASE_URL"] = cleanup.enter_context(scratch_postgres("mrtrweb_faults"))
        cleanup.callback(flaky.stop)
        cleanup.callback(app.stop)
        REPORT_LINES.append(f"-- database: {request.param}")
        flaky.start()
        app.migrate(timeout=180)
        app.shell(
            _SETUP.format(
                person=PERSON[0],
                person_pw=PERSON[1],
                admin=ADMIN[0],
                admin_pw=ADMIN[1],
                url=flaky.url,
            )
        )
        app.pick_port()
        stack.start_web()
        stack.start_worker()
        yield stack
