"""What every served app (tests/support/processes.py) starts from, made once per test process:
a migrated database for each backend and the collected static files, copied into each new app.

``migrate`` on an empty database runs every migration in an interpreter of its own (seconds of
CPU, a few dozen times a run) and ends the same way every time: the migrations and the roles
``post_migrate`` makes read nothing from the environment. So the first app of each backend
migrates as before and its database is kept: a SQLite file copied through SQLite's backup API,
a PostgreSQL database the later ones are created from (``CREATE DATABASE ... TEMPLATE``).
``collectstatic`` likewise. Whatever cannot be copied is made by the app itself, as before.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import sqlite3
import tempfile
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

import psycopg

from tests.support import services

_kept = Path(tempfile.mkdtemp(prefix=f"mrtrweb-set-up-once-{os.getpid()}-"))
atexit.register(shutil.rmtree, _kept, ignore_errors=True)

_sqlite_template: Path | None = None
_postgres_template: str | None = None  # a database on the tests' server
_static_template: Path | None = None


def copy_migrated(env: Mapping[str, str]) -> bool:
    """Give the app of ``env`` its migrated database; False when there is none to copy yet
    (or it is not fresh), and the app must migrate it itself."""
    target = _sqlite_file(env)
    if target is not None:
        if _sqlite_template is None or (target.exists() and target.stat().st_size):
            return False
        target.parent.mkdir(parents=True, exist_ok=True)
        _backup(_sqlite_template, target)
        return True
    name = _postgres_name(env)
    if name is None or _postgres_template is None:
        return False
    try:
        # The scratch database was just made, empty: made again as a copy of the template.
        services.drop_database(name)
        services.create_database(name, template=_postgres_template)
    except psycopg.Error:
        with contextlib.suppress(psycopg.errors.DuplicateDatabase):
            services.create_database(name)  # empty again, for the app to migrate
        return False
    return True


def keep_migrated(env: Mapping[str, str]) -> None:
    """After the app of ``env`` migrated its fresh database: keep it for the next apps."""
    global _sqlite_template, _postgres_template
    target = _sqlite_file(env)
    if target is not None:
        if _sqlite_template is None and target.exists():
            kept = _kept / "db.sqlite3"
            _backup(target, kept)
            _sqlite_template = kept
        return
    name = _postgres_name(env)
    if name is None or _postgres_template is not None:
        return
    template = f"mrtrweb_template_{uuid.uuid4().hex[:12]}"
    # `migrate`'s connections end as its process exits, which the server may see a moment
    # later; a source database with sessions cannot be copied.
    for _ in range(30):
        try:
            services.create_database(template, template=name)
        except psycopg.errors.ObjectInUse:
            time.sleep(0.1)
            continue
        except psycopg.Error:
            return
        _postgres_template = template
        atexit.register(services.drop_database, template)
        return


def copy_static(env: Mapping[str, str]) -> bool:
    """Give the app of ``env`` the collected static files; False when there are none yet."""
    root = env.get("DJANGO_STATIC_ROOT")
    if _static_template is None or not root or Path(root).exists():
        return False
    shutil.copytree(_static_template, root)
    return True


def keep_static(env: Mapping[str, str]) -> None:
    global _static_template
    root = env.get("DJANGO_STATIC_ROOT")
    if _static_template is None and root and Path(root).is_dir():
        shutil.copytree(root, _kept / "static")
        _static_template = _kept / "static"


def _sqlite_file(env: Mapping[str, str]) -> Path | None:
    """The app's SQLite file: where settings put it when no DATABASE_URL is given."""
    if env.get("DATABASE_URL") or not env.get("MRTRWEB_VAR_DIR"):
        return None
    return Path(env["MRTRWEB_VAR_DIR"]) / "db.sqlite3"


def _postgres_name(env: Mapping[str, str]) -> str | None:
    """The app's database on the tests' PostgreSQL server (tests/support/services.py)."""
    url = env.get("DATABASE_URL", "")
    if not url.startswith(("postgres://", "postgresql://")):
        return None
    return urlsplit(url).path.lstrip("/")


def _backup(source: Path, target: Path) -> None:
    # The backup API, not a file copy: it reads a consistent database whatever its journal.
    with (
        contextlib.closing(sqlite3.connect(source)) as read,
        contextlib.closing(sqlite3.connect(target)) as write,
    ):
        read.backup(write)
