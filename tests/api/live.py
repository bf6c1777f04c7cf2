"""The app served for real (uvicorn on 127.0.0.1, a fresh SQLite database in a temp dir), for
the tests that talk to the API over HTTP: schemathesis, the example script, waiting without a
thread. The same setup as the browser tests' harness (tests/browser/conftest.py), kept small
and separate so either can change on its own.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from tests.peers.fixtures import Peer, free_port

REPO_ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT = 30.0
PERSON = ("ann", "ann-api-pw-1")
# Variables that would point the app somewhere other than its fresh temp dir.
_FOREIGN = ("DATABASE_URL", "REDIS_URL", "MRTRWEB_FERNET_KEYS", "DJANGO_SECRET_KEY")

_SEED = """
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from mrtrweb.api.models import ApiToken
from mrtrweb.calls import engine
from mrtrweb.servers.models import Connection, ToolExposure

User = get_user_model()
ann = User.objects.create_user({person!r}, password={password!r})
ann.groups.add(Group.objects.get(name="End users"))
otto = User.objects.create_user("otto")
otto.groups.add(Group.objects.get(name="Operators"))
peer = Connection.objects.create(name="peer", url={peer_url!r})
for tool in ("approve_deploy", "echo"):
    ToolExposure.objects.create(connection=peer, tool_name=tool, exposed=True)
# A finished call, so requests for an existing id never wait.
engine.start_call(
    connection=peer, method="tools/call", target="echo", arguments={{"text": "x"}}, user=ann
)
print(ApiToken.issue(ann, "tests")[1])
print(ApiToken.issue(otto, "tests")[1])
"""


@dataclass
class ApiApp:
    root: Path
    env: dict[str, str]
    base_url: str = ""
    token: str = ""  # ann's: an end user who may start approve_deploy and echo on "peer"
    operator_token: str = ""
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def manage(self, *args: str, timeout: float = 120) -> str:
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=REPO_ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        assert done.returncode == 0, f"manage.py {args[0]}: {done.stdout}\n{done.stderr}"
        return done.stdout

    def spawn(self, name: str, *command: str) -> None:
        with open(self.root / f"{name}.log", "ab") as log:
            self.processes[name] = subprocess.Popen(
                command,
                cwd=REPO_ROOT,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def log(self, name: str) -> str:
        path = self.root / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def check_alive(self) -> None:
        for name, process in self.processes.items():
            if process.poll() is not None:
                raise AssertionError(f"{name} exited: {self.log(name)[-4000:]}")

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is not None:
                continue
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)


def _environment(root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO_") and k not in _FOREIGN}
    env.update(
        DJANGO_SETTINGS_MODULE="mrtrweb.settings",
        MRTRWEB_VAR_DIR=str(root / "var"),
        DJANGO_STATIC_ROOT=str(root / "staticfiles"),
        DJANGO_DEBUG="0",
        # Deliveries run only in the db_worker started here (when asked for), never in uvicorn.
        MRTRWEB_INPROCESS_WORKER="0",
        PYTHONUNBUFFERED="1",
        PYTHONPATH=os.pathsep.join(p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH")) if p),
    )
    return env


def _wait_until_served(app: ApiApp) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        app.check_alive()
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(app.base_url + "/healthz", timeout=1.0).status_code == 200:
                return
        time.sleep(0.1)
    raise AssertionError(f"the app did not answer in time:\n{app.log('web')}")


def serve(peer: Peer, *, worker: bool, pages: bool = False) -> Iterator[ApiApp]:
    """Serve the app; ``worker`` runs db_worker beside it (deliveries, webhooks), ``pages``
    collects the static files the HTML pages need."""
    root = Path(tempfile.mkdtemp(prefix="mrtrweb-api-"))
    app = ApiApp(root=root, env=_environment(root))
    try:
        app.manage("migrate", "--noinput", "-v0")
        if pages:
            app.manage("collectstatic", "--noinput", "-v0")
        seed = _SEED.format(person=PERSON[0], password=PERSON[1], peer_url=peer.url)
        app.token, app.operator_token = app.manage("shell", "-c", seed).split()[-2:]
        port = free_port()
        app.base_url = f"http://127.0.0.1:{port}"
        uvicorn = str(Path(sys.executable).with_name("uvicorn"))
        app.spawn(
            "web",
            uvicorn,
            "mrtrweb.asgi:application",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--lifespan",
            "off",
        )
        if worker:
            app.spawn(
                "worker",
                sys.executable,
                "manage.py",
                "db_worker",
                "--no-reload",
                "--no-startup-delay",
                "--interval",
                "0.2",
            )
        _wait_until_served(app)
        yield app
    finally:
        app.stop()
        shutil.rmtree(root, ignore_errors=True)
