"""The scale-out topology, as real processes: PostgreSQL, Redis, two web processes, one worker.

Package-scoped, shared by the concurrency and the scale-out tests:

- a fresh PostgreSQL database ``mrtrweb_scale_<pid>`` on 127.0.0.1:5432, migrated once and
  dropped afterwards;
- Redis at 127.0.0.1:6379, database ``SCALE_REDIS_DB`` with a channel prefix of this run's
  own, so runs sharing the server never hear each other;
- web processes A and B (``uvicorn mrtrweb.asgi:application`` on free ports) and one
  ``manage.py db_worker``, spawned and stopped with the browser harness's helpers
  (tests/browser/conftest.py), with ``MRTRWEB_INPROCESS_WORKER=0``: only the worker delivers;
- the ``fastmcp_peer`` registered as the connection ``peer``;
- ``people``: ANSWERERS accounts (the caller, an Operator, and Admins, all allowed to answer
  the caller's rounds) with sessions created straight in the database, several per person.

PostgreSQL or Redis missing: skipped with the reason, and failed under ``CI`` (which starts
both), as tests/core/test_services.py does.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import httpx
import psycopg
import pytest
import redis
from psycopg import sql

from tests.browser.conftest import (  # the browser harness: one way to run the app's processes
    LiveApp,
    _environment,
    _spawn,
    _stop,
    browser,  # noqa: F401  (the Chromium fixture, reused as is)
)
from tests.peers.fixtures import Peer, free_port

POSTGRES_URL = os.environ.get(
    "MRTRWEB_TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres"
)
REDIS_SERVER = os.environ.get("MRTRWEB_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
SCALE_REDIS_DB = 7
START_TIMEOUT = 40.0

CALLER = ("carol", "carol-scale-pw-1")
ANSWERERS = 10  # people; each gets SESSIONS_EACH sessions
SESSIONS_EACH = 5


def _unavailable(service: str, error: Exception) -> None:
    message = f"{service} is not reachable on 127.0.0.1: {error}"
    if os.environ.get("CI"):
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


@pytest.fixture(scope="package")
def scale_database() -> Iterator[str]:
    name = f"mrtrweb_scale_{os.getpid()}"
    try:
        admin = psycopg.connect(POSTGRES_URL, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as error:
        _unavailable("PostgreSQL", error)
    with admin:
        drop = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        admin.execute(drop)
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        try:
            yield urlunsplit(urlsplit(POSTGRES_URL)._replace(path=f"/{name}"))
        finally:
            admin.execute(drop)


@pytest.fixture(scope="package")
def scale_redis_url() -> str:
    url = urlunsplit(urlsplit(REDIS_SERVER)._replace(path=f"/{SCALE_REDIS_DB}"))
    try:
        redis.Redis.from_url(url, socket_connect_timeout=5).ping()
    except redis.RedisError as error:
        _unavailable("Redis", error)
    return url


@dataclass
class Topology:
    """The running processes; ``app`` holds the shared environment, logs and ``manage``."""

    app: LiveApp
    url_a: str
    url_b: str
    database_url: str
    redis_url: str
    sessions: dict[str, list[str]] = field(default_factory=dict)  # username -> session keys
    started_in: float = 0.0

    def db(self) -> psycopg.Connection:
        return psycopg.connect(self.database_url, autocommit=True)

    def check_alive(self) -> None:
        self.app.check_alive()

    def events(self, name: str, call_id: int) -> list[dict]:
        """The engine-event log lines process ``name`` wrote about call ``call_id``."""
        found = []
        for line in self.app.log(name).splitlines():
            if line.startswith("{"):
                record = json.loads(line)
                if record.get("logger") == "mrtrweb.events" and record["call_id"] == call_id:
                    found.append(record)
        return found

    def report(self) -> str:
        ports = {
            name: urlsplit(url).port for name, url in (("web A", self.url_a), ("web B", self.url_b))
        }
        return (
            f"topology: web A :{ports['web A']}, web B :{ports['web B']}, one db_worker, "
            f"PostgreSQL {urlsplit(self.database_url).path[1:]}, Redis db {SCALE_REDIS_DB}; "
            f"started in {self.started_in:.1f}s"
        )


_PEOPLE = """
import json
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
from django.contrib.auth.models import Group
from django.contrib.sessions.backends.db import SessionStore
from mrtrweb.calls.roles import ADMINS, OPERATORS
User = get_user_model()
caller = User.objects.create_user({caller!r}, password={caller_pw!r})
# Operators see the whole catalog on the start page (nobody exposed the peer's tools).
caller.groups.add(Group.objects.get(name=OPERATORS))
people = [caller]
for n in range(1, {answerers}):
    person = User.objects.create_user(f"admin{{n}}", password=None)
    person.groups.add(Group.objects.get(name=ADMINS))
    people.append(person)
sessions = {{}}
for person in people:
    keys = []
    for _ in range({each}):
        store = SessionStore()
        store[SESSION_KEY] = str(person.pk)
        store[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
        store[HASH_SESSION_KEY] = person.get_session_auth_hash()
        store.create()
        keys.append(store.session_key)
    sessions[person.get_username()] = keys
print(json.dumps(sessions))
"""


def _wait_ready(app: LiveApp, *urls: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    pending = list(urls)
    while pending and time.monotonic() < deadline:
        app.check_alive()
        with contextlib.suppress(httpx.HTTPError):
            # /readyz: the database, Redis and the task table all answer from this process.
            if httpx.get(pending[0] + "/readyz", timeout=5.0).status_code == 200:
                pending.pop(0)
                continue
        time.sleep(0.1)
    if pending:
        raise AssertionError(
            f"{pending} not ready within {START_TIMEOUT:.0f}s:\n"
            f"A:\n{app.log('web_a')[-3000:]}\nB:\n{app.log('web_b')[-3000:]}"
        )


def _db_worker(app: LiveApp) -> None:
    # As a deployment runs it, polling a little faster so the tests wait less.
    _spawn(
        app,
        "worker",
        sys.executable,
        "manage.py",
        "db_worker",
        "--no-reload",
        "--no-startup-delay",
        "--interval",
        "0.2",
    )


def _uvicorn(app: LiveApp, name: str, port: int) -> None:
    _spawn(
        app,
        name,
        str(Path(sys.executable).with_name("uvicorn")),
        "mrtrweb.asgi:application",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--lifespan",
        "off",
    )


@pytest.fixture(scope="package")
def topology(scale_database: str, scale_redis_url: str, fastmcp_peer: Peer) -> Iterator[Topology]:
    started = time.monotonic()
    root = Path(tempfile.mkdtemp(prefix="mrtrweb-scale-"))
    env = _environment(root)
    env.update(
        DATABASE_URL=scale_database,
        REDIS_URL=scale_redis_url,
        MRTRWEB_CHANNEL_PREFIX=f"mrtrweb-scale-{os.getpid()}:",
        # Only the db_worker delivers, as in a scaled-out deployment.
        MRTRWEB_INPROCESS_WORKER="0",
        # As in production: every process logs JSON lines (read back by the tests).
        DJANGO_LOG_FORMAT="json",
    )
    app = LiveApp(base_url="", root=root, env=env)
    port_a, port_b = free_port(), free_port()
    topo = Topology(
        app=app,
        url_a=f"http://127.0.0.1:{port_a}",
        url_b=f"http://127.0.0.1:{port_b}",
        database_url=scale_database,
        redis_url=scale_redis_url,
    )
    app.base_url = topo.url_a
    try:
        app.manage("migrate", "--noinput", "-v0", timeout=180)
        app.manage("collectstatic", "--noinput", "-v0", timeout=120)
        app.manage("mcp_server", "add", "--name", "peer", "--url", fastmcp_peer.url)
        printed = app.shell(
            _PEOPLE.format(
                caller=CALLER[0], caller_pw=CALLER[1], answerers=ANSWERERS, each=SESSIONS_EACH
            )
        )
        # The last line: `shell` may print a note about its automatic imports first.
        topo.sessions = json.loads(printed.strip().splitlines()[-1])
        _uvicorn(app, "web_a", port_a)
        _uvicorn(app, "web_b", port_b)
        _db_worker(app)
        _wait_ready(app, topo.url_a, topo.url_b)
        topo.started_in = time.monotonic() - started
        yield topo
    finally:
        for process in app.processes.values():
            _stop(process)
        shutil.rmtree(root, ignore_errors=True)


# -- speaking to the web processes as a signed-in person -----------------------------------------

_CSRF_INPUT = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


def csrf_token(html: str) -> str:
    found = _CSRF_INPUT.search(html)
    assert found, "no CSRF token in the page"
    return found.group(1)


def session_client(base_url: str, session_key: str, **kwargs) -> httpx.Client:
    return httpx.Client(
        base_url=base_url, cookies={"sessionid": session_key}, timeout=30.0, **kwargs
    )


def start_call(base_url: str, session_key: str, tool: str) -> tuple[int, int]:
    """Start ``tool`` on ``peer`` through the start form of one web process; returns the
    call's id and the id of the round it parked."""
    with session_client(base_url, session_key) as client:
        form = client.get(f"/calls/start/peer/?tool={tool}")
        assert form.status_code == 200, form.text[:2000]
        started = client.post(
            f"/calls/start/peer/?tool={tool}",
            data={"start": "1", "csrfmiddlewaretoken": csrf_token(form.text)},
        )
        assert started.status_code == 303, started.text[:2000]
        location = started.headers["location"]
        found = re.search(r"/rounds/(\d+)/", location)
        assert found, f"the call did not park a round: {location}"
        round_page = client.get(location)
        call = re.search(r'href="/calls/(\d+)/"', round_page.text)
        assert call, "the round page does not link its call"
        return int(call.group(1)), int(found.group(1))
