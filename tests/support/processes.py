"""The app as real child processes: its environment, uvicorn and ``manage.py db_worker``
started with their output in log files, waiting until they serve, stopping them.

A :class:`ServedApp` owns a temp dir (``root``: the SQLite database under ``var/``, the
collected static files, one ``<name>.log`` per process) and the environment every one of its
processes gets; each harness subclasses it for its own needs (the browser's worker switch, the
API's tokens).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from mrtrweb.env import uvicorn_proxy_flags
from tests.peers.fixtures import free_port
from tests.support import set_up_once

__all__ = [
    "REPO_ROOT",
    "START_TIMEOUT",
    "ServedApp",
    "accepts",
    "app_environment",
    "free_port",
    "kill",
    "spawn",
    "start_db_worker",
    "start_uvicorn",
    "stop",
    "wait_until_served",
]

HOST = "127.0.0.1"
REPO_ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT = 30.0
UVICORN = str(Path(sys.executable).with_name("uvicorn"))
# Variables that would point the app somewhere other than its fresh temp dir.
FOREIGN_VARIABLES = ("DATABASE_URL", "REDIS_URL", "MRTRWEB_FERNET_KEYS", "DJANGO_SECRET_KEY")


def app_environment(root: Path, **extra: str) -> dict[str, str]:
    """The environment of the app's processes: this one's without any ``DJANGO_*`` or
    :data:`FOREIGN_VARIABLES`, the state under ``root``, served as deployed (``DEBUG`` off, so
    WhiteNoise serves the collected, hashed files), then ``extra``."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("DJANGO_") and k not in FOREIGN_VARIABLES
    }
    env.update(
        DJANGO_SETTINGS_MODULE="mrtrweb.settings",
        MRTRWEB_VAR_DIR=str(root / "var"),
        DJANGO_STATIC_ROOT=str(root / "staticfiles"),
        DJANGO_DEBUG="0",
        PYTHONUNBUFFERED="1",
        PYTHONPATH=os.pathsep.join(p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH")) if p),
    )
    env.update(extra)
    return env


def spawn(command: list[str], *, env: Mapping[str, str], log: Path) -> subprocess.Popen[bytes]:
    """Start ``command`` from the repo root, its stdout and stderr appended to ``log``."""
    with open(log, "ab") as out:
        # A session of its own, so stopping it takes any child it forked along.
        return subprocess.Popen(
            command,
            cwd=REPO_ROOT,
            env=dict(env),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the process's session, SIGKILL if it is still there 10 s later."""
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


def kill(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL to the process's session: no cleanup, no graceful shutdown, exactly a crash."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=10)


def accepts(port: int) -> bool:
    """Whether something accepts TCP connections on 127.0.0.1:``port``."""
    try:
        with socket.create_connection((HOST, port), timeout=0.2):
            return True
    except OSError:
        return False


@dataclass
class ServedApp:
    root: Path
    env: dict[str, str]
    base_url: str = ""
    port: int = 0
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def url(self, path: str) -> str:
        return self.base_url + path

    def manage(
        self, *args: str, timeout: float = 60, input: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        """``manage.py ARGS`` against this app's database, ``input`` its stdin when given (a
        secret kept off the command line); raises with the output on failure."""
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=REPO_ROOT,
            env=self.env,
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if done.returncode != 0:
            raise AssertionError(
                f"manage.py {' '.join(args)} exited with {done.returncode}\n"
                f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
            )
        return done

    def migrate(self, *, static: bool = True, timeout: float = 120) -> None:
        """``migrate`` the fresh database, then (``static``) ``collectstatic``: with DEBUG off,
        as deployed, pages link to the collected, hashed files.

        Both run once per test process and backend; later apps get a copy of what they made
        (tests/support/set_up_once.py): each costs an interpreter and seconds of CPU, and always
        ends with the same tables, rows and files."""
        if not set_up_once.copy_migrated(self.env):
            self.manage("migrate", "--noinput", "-v0", timeout=timeout)
            set_up_once.keep_migrated(self.env)
        if static and not set_up_once.copy_static(self.env):
            self.manage("collectstatic", "--noinput", "-v0", timeout=timeout)
            set_up_once.keep_static(self.env)

    def pick_port(self) -> None:
        """A free 127.0.0.1 port for the web process, and the base URL that goes with it."""
        self.port = free_port()
        self.base_url = f"http://{HOST}:{self.port}"

    def shell(self, code: str, timeout: float = 60) -> str:
        """Run Python inside the app (``manage.py shell -c``); returns what it printed."""
        return self.manage("shell", "-c", code, timeout=timeout).stdout

    def spawn(self, name: str, *command: str) -> None:
        """Start process ``name`` with the app's environment, logging to ``root/<name>.log``."""
        self.processes[name] = spawn(list(command), env=self.env, log=self.root / f"{name}.log")

    def log(self, name: str) -> str:
        path = self.root / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def logs_tail(self, chars: int = 3000) -> str:
        return "\n".join(
            f"-- {name}.log (tail):\n{self.log(name)[-chars:]}" for name in self.processes
        )

    def check_alive(self) -> None:
        for name, process in self.processes.items():
            if process.poll() is not None:
                raise AssertionError(
                    f"{name} exited with {process.returncode}; its log:\n{self.log(name)[-4000:]}"
                )

    def stop(self) -> None:
        """Stop every process (they stay listed, so their logs stay reachable)."""
        for process in self.processes.values():
            stop(process)


def start_uvicorn(app: ServedApp, *, name: str = "web", port: int, lifespan: bool) -> None:
    """``uvicorn mrtrweb.asgi:application`` on 127.0.0.1:``port``, as ``make run`` serves it
    (the proxies it trusts from the app's ``MRTRWEB_TRUSTED_PROXIES``); ``lifespan`` on runs
    the app's startup (the in-process task worker, when enabled)."""
    app.spawn(
        name,
        UVICORN,
        "mrtrweb.asgi:application",
        "--host",
        HOST,
        "--port",
        str(port),
        "--lifespan",
        "on" if lifespan else "off",
        *uvicorn_proxy_flags(app.env),
    )


def start_db_worker(app: ServedApp, *, interval: float, name: str = "worker") -> None:
    """``manage.py db_worker`` as a deployment runs it, polling every ``interval`` seconds."""
    app.spawn(
        name,
        sys.executable,
        "manage.py",
        "db_worker",
        "--no-reload",
        "--no-startup-delay",
        "--interval",
        str(interval),
    )


def wait_until_served(
    app: ServedApp,
    *base_urls: str,
    path: str = "/healthz",
    timeout: float = START_TIMEOUT,
    request_timeout: float = 1.0,
) -> None:
    """Until ``path`` answers 200 at each of ``base_urls`` (default: the app's); fails at once
    when one of the app's processes exits, and with the tails of their logs after ``timeout``."""
    pending = list(base_urls or (app.base_url,))
    deadline = time.monotonic() + timeout
    while pending and time.monotonic() < deadline:
        app.check_alive()
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(pending[0] + path, timeout=request_timeout).status_code == 200:
                pending.pop(0)
                continue
        time.sleep(0.1)
    if pending:
        raise AssertionError(
            f"{', '.join(pending)} did not answer {path} within {timeout:.0f}s:\n" + app.logs_tail()
        )
