"""The scale-out topology, as real processes: PostgreSQL, Redis, two web processes, one worker.

Package-scoped, shared by the concurrency and the scale-out tests:

- a fresh PostgreSQL database ``mrtrweb_scale_<random>`` on 127.0.0.1:5432, migrated once and
  dropped afterwards;
- Redis at 127.0.0.1:6379, database ``SCALE_REDIS_DB`` with a channel prefix of this run's
  own, so runs sharing the server never hear each other;
- web processes A and B (``uvicorn mrtrweb.asgi:application`` on free ports) and one
  ``manage.py db_worker``, spawned and stopped with tests/support/processes.py, with
  ``MRTRWEB_INPROCESS_WORKER=0``: a web process sends the answers it takes, and the worker
  runs every other task (retries, safety nets, expiry);
- the ``fastmcp_process_peer`` registered as the connection ``peer``;
- ``people``: ANSWERERS accounts (the caller, an Operator, and Admins, all allowed to answer
  the caller's rounds) with sessions created straight in the database, several per person.

PostgreSQL or Redis missing: skipped with the reason, and failed under ``CI`` (which starts
both), as tests/core/test_services.py does (tests/support/services.py).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
import redis

from tests.browser.conftest import browser  # noqa: F401  (the Chromium fixture, reused as is)
from tests.peers.fixtures import Peer
from tests.support import second_factor
from tests.support.processes import (
    ServedApp,
    app_environment,
    free_port,
    start_db_worker,
    start_uvicorn,
    wait_until_served,
)
from tests.support.services import REDIS_URL, scratch_postgres, unavailable
from tests.support.web import csrf_token, session_client

SCALE_REDIS_DB = 7
START_TIMEOUT = 40.0

CALLER = ("carol", "carol-scale-pw-1")
ANSWERERS = 10  # people; each gets SESSIONS_EACH sessions
SESSIONS_EACH = 5


@pytest.fixture(scope="package")
def scale_database() -> Iterator[str]:
    with scratch_postgres("mrtrweb_scale") as url:
        yield url


@pytest.fixture(scope="package")
def scale_redis_url() -> str:
    url = urlunsplit(urlsplit(REDIS_URL)._replace(path=f"/{SCALE_REDIS_DB}"))
    try:
        redis.Redis.from_url(url, socket_connect_timeout=5).ping()
    except redis.RedisError as error:
        unavailable("Redis", error)
    return url


@dataclass
class Topology:
    """The running processes; ``app`` holds the shared environment, logs and ``manage``."""

    app: ServedApp
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


# Each session passed two-step sign-in (the operator and the admins must) with the harness's
# authenticator, as django-otp records it.
_PEOPLE = (
    second_factor.ENROL
    + """
import json
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
from django.contrib.auth.models import Group
from django.contrib.sessions.backends.db import SessionStore
from django_otp import DEVICE_ID_SESSION_KEY
from mrtrweb.people.roles import ADMINS, OPERATORS
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
    device = enrol(person)
    keys = []
    for _ in range({each}):
        store = SessionStore()
        store[SESSION_KEY] = str(person.pk)
        store[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
        store[HASH_SESSION_KEY] = person.get_session_auth_hash()
        store[DEVICE_ID_SESSION_KEY] = device.persistent_id
        store.create()
        keys.append(store.session_key)
    sessions[person.get_username()] = keys
print(json.dumps(sessions))
"""
)


@pytest.fixture(scope="package")
def topology(
    scale_database: str, scale_redis_url: str, fastmcp_process_peer: Peer
) -> Iterator[Topology]:
    started = time.monotonic()
    root = Path(tempfile.mkdtemp(prefix="mrtrweb-scale-"))
    env = app_environment(
        root,
        DATABASE_URL=scale_database,
        REDIS_URL=scale_redis_url,
        MRTRWEB_CHANNEL_PREFIX=f"mrtrweb-scale-{os.getpid()}:",
        # No task runs in a web process, as in a scaled-out deployment: the db_worker runs them.
        MRTRWEB_INPROCESS_WORKER="0",
        # As in production: every process logs JSON lines (read back by the tests).
        DJANGO_LOG_FORMAT="json",
        # The tests' webhook receivers listen on 127.0.0.1.
        MRTRWEB_WEBHOOK_ALLOW_PRIVATE="1",
    )
    app = ServedApp(root=root, env=env)
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
        app.migrate(timeout=180)
        app.manage("mcp_server", "add", "--name", "peer", "--url", fastmcp_process_peer.url)
        printed = app.shell(
            _PEOPLE.format(
                caller=CALLER[0], caller_pw=CALLER[1], answerers=ANSWERERS, each=SESSIONS_EACH
            )
        )
        # The last line: `shell` may print a note about its automatic imports first.
        topo.sessions = json.loads(printed.strip().splitlines()[-1])
        start_uvicorn(app, name="web_a", port=port_a, lifespan=False)
        start_uvicorn(app, name="web_b", port=port_b, lifespan=False)
        # As a deployment runs it, polling a little faster so the tests wait less.
        start_db_worker(app, interval=0.2)
        # /readyz: the database, Redis and the task table all answer from this process.
        wait_until_served(
            app, topo.url_a, topo.url_b, path="/readyz", timeout=START_TIMEOUT, request_timeout=5.0
        )
        topo.started_in = time.monotonic() - started
        yield topo
    finally:
        app.stop()
        shutil.rmtree(root, ignore_errors=True)


# -- speaking to the web processes as a signed-in person -----------------------------------------


T = TypeVar("T")


def run_apart(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to its end on an event loop of its own, in a thread of its own: the main
    thread may hold Playwright's loop (its sync API runs one there, and the browser fixture
    lives for the session), where ``asyncio.run`` refuses to start."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


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
