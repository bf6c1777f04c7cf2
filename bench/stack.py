"""What one benchmark run stands on: the MCP server, a fresh database, the app and its worker.

Everything listens on 127.0.0.1 and lives in a temporary directory (SQLite file, secret keys,
collected static files) or a PostgreSQL database created for the run and dropped after it.
The bench process itself sets Django up against the same database, to seed rows, read a
call's status and count queries.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx

HOST = "127.0.0.1"
REPO_ROOT = Path(__file__).resolve().parents[1]
PG_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
REDIS_PORT = 6379
PERSON = "bench-person"
ADMIN = "bench-admin"
PASSWORD = "bench-password-not-secret"
CONNECTION = "bench"
TOOL = "confirm"
# What the app's start form sends for TOOL (its one argument, filled with its default): the
# baselines send the same, so the server does the same work for them as for the app.
ARGUMENTS = {"action": "deploy"}
# The web server's idle keep-alive, seconds (see where uvicorn is started).
KEEP_ALIVE_SECONDS = 120


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def reachable(port: int) -> bool:
    try:
        with socket.create_connection((HOST, port), timeout=0.3):
            return True
    except OSError:
        return False


def inprocess_worker_supported() -> bool:
    """Whether the web process can run the task worker itself (MRTRWEB_INPROCESS_WORKER)."""
    return any(
        "MRTRWEB_INPROCESS_WORKER" in path.read_text(errors="replace")
        for path in (REPO_ROOT / "mrtrweb").rglob("*.py")
        if "migrations" not in path.parts
    )


@dataclass
class Child:
    name: str
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)


@dataclass
class Stack:
    backend: str
    workdir: Path
    env: dict[str, str]
    worker_mode: str
    mcp_url: str = ""
    app_url: str = ""
    children: dict[str, Child] = field(default_factory=dict)
    database: str = ""

    def spawn(self, name: str, *argv: str) -> Child:
        log = self.workdir / f"{name}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                list(argv), cwd=REPO_ROOT, env=self.env, stdout=out, stderr=subprocess.STDOUT
            )
        child = self.children[name] = Child(name, process, log)
        return child

    def manage(self, *args: str) -> None:
        subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=REPO_ROOT,
            env=self.env,
            check=True,
            stdout=subprocess.DEVNULL,
        )

    def wait_http(self, child: Child, url: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if child.process.poll() is not None:
                raise RuntimeError(f"{child.name} exited early:\n{child.output()[-4000:]}")
            try:
                httpx.get(url, timeout=1.0)
                return
            except httpx.HTTPError:
                time.sleep(0.05)
        raise RuntimeError(f"{child.name} did not answer {url} in {timeout:.0f}s")

    @property
    def web_pid(self) -> int:
        return self.children["web"].pid

    @property
    def worker_pid(self) -> int | None:
        worker = self.children.get("worker")
        return worker.pid if worker is not None else None


def _create_pg_database() -> str:
    import psycopg

    name = f"mrtrweb_bench_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return name


def _drop_pg_database(name: str) -> None:
    import psycopg

    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# Settings a run may vary to compare (e.g. MRTRWEB_DB_POOL_SIZE=0 python -m bench ...); every
# other setting of the calling shell is left out, so a run measures the defaults.
PASSED_THROUGH = frozenset(
    {"MRTRWEB_DB_POOL_SIZE", "MRTRWEB_DB_PREPARE_THRESHOLD", "MRTRWEB_BENCH_TRACEMALLOC"}
)


@contextlib.contextmanager
def stack(backend: str, *, worker_mode: str, worker_interval: float) -> Iterator[Stack]:
    """Start everything for one backend ("sqlite" or "postgresql"); stop and remove it after."""
    workdir = Path(tempfile.mkdtemp(prefix=f"mrtrweb-bench-{backend}-"))
    env = {
        key: value
        for key, value in os.environ.items()
        if key in PASSED_THROUGH
        or not key.startswith(("DJANGO_", "MRTRWEB_", "DATABASE_URL", "REDIS_URL"))
    }
    env.update(
        # The app's settings plus the Django floor's view (bench/settings.py, bench/urls.py).
        DJANGO_SETTINGS_MODULE="bench.settings",
        MRTRWEB_VAR_DIR=str(workdir / "var"),
        DJANGO_STATIC_ROOT=str(workdir / "static"),
        DJANGO_ALLOWED_HOSTS="127.0.0.1,localhost,testserver",
        DJANGO_LOG_LEVEL="WARNING",
        PYTHONUNBUFFERED="1",
        PYTHONPATH=os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH")) if p),
    )
    if worker_mode == "inprocess":
        env["MRTRWEB_INPROCESS_WORKER"] = "1"
    else:
        env["MRTRWEB_INPROCESS_WORKER"] = "0"
    if worker_mode == "process" and reachable(REDIS_PORT):
        # A separate worker publishes live events; only Redis carries them to the web process.
        env["REDIS_URL"] = f"redis://{HOST}:{REDIS_PORT}/0"
        env["MRTRWEB_CHANNEL_PREFIX"] = f"bench-{uuid.uuid4().hex[:8]}:"
    run = Stack(backend=backend, workdir=workdir, env=env, worker_mode=worker_mode)
    try:
        if backend == "postgresql":
            run.database = _create_pg_database()
            env["DATABASE_URL"] = f"postgres://postgres@{HOST}:5432/{run.database}"
        # Django in this process reads the same environment.
        os.environ.update({k: v for k, v in env.items() if k.startswith(("DJANGO_", "MRTRWEB_"))})
        for key in ("DATABASE_URL", "REDIS_URL"):
            if key in env:
                os.environ[key] = env[key]
            else:
                os.environ.pop(key, None)
        run.manage("migrate", "--noinput", "-v0")
        run.manage("collectstatic", "--noinput", "-v0")

        mcp_port = free_port()
        server = run.spawn("mcp", sys.executable, "-m", "bench.server", "--port", str(mcp_port))
        run.mcp_url = f"http://{HOST}:{mcp_port}/mcp"
        run.wait_http(server, f"http://{HOST}:{mcp_port}/")

        app_port = free_port()
        web = run.spawn(
            "web",
            sys.executable,
            "-m",
            "uvicorn",
            # mrtrweb.asgi:application with /bench-bare/ (no Django) in front of it.
            "bench.django_floor:application",
            "--host",
            HOST,
            "--port",
            str(app_port),
            "--lifespan",
            "on",
            "--log-level",
            "warning",
            "--no-access-log",
            # Idle connections kept longer than any pause of the bench's people (50 sign-ins
            # take about 9 s before the P7 crowd). With uvicorn's 5 s, a person's next request
            # could go out on a connection the server was closing at that moment: a browser
            # sends such a request again (nothing came back on a reused connection), httpx
            # does not, and the run counted one start in a hundred as a ReadError.
            "--timeout-keep-alive",
            str(KEEP_ALIVE_SECONDS),
        )
        run.app_url = f"http://{HOST}:{app_port}"
        run.wait_http(web, f"{run.app_url}/healthz")
        if worker_mode == "process":
            run.spawn(
                "worker",
                sys.executable,
                "manage.py",
                "db_worker",
                "--no-reload",
                "--no-startup-delay",
                "--interval",
                str(worker_interval),
                "-v0",
            )
        yield run
    except BaseException:
        # What the servers said is the best clue to a failed run; the directory goes away.
        for child in run.children.values():
            print(f"--- {child.name} log (tail) ---\n{child.output()[-3000:]}", file=sys.stderr)
        raise
    finally:
        for child in reversed(list(run.children.values())):
            child.stop()
        if run.database:
            with contextlib.suppress(Exception):
                from django.db import connections

                connections.close_all()
            _drop_pg_database(run.database)
        shutil.rmtree(workdir, ignore_errors=True)
