"""The served apps' copied set-up (tests/support/set_up_once.py) is what ``migrate`` and
``collectstatic`` make: same tables, same rows the migrations and ``post_migrate`` leave, same
files; on both backends."""

from __future__ import annotations

import contextlib
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from tests.support import set_up_once
from tests.support.processes import ServedApp, app_environment
from tests.support.services import scratch_postgres

# What migrations and post_migrate leave behind, beside the tables themselves.
ROWS = {
    "django_migrations": "app, name",
    "django_content_type": "app_label, model",
    "auth_group": "name",
    "auth_permission": "codename",
}
POSTGRES_SCHEMA = (
    "SELECT table_name, column_name, data_type, is_nullable, column_default"
    " FROM information_schema.columns WHERE table_schema = 'public'"
    " UNION ALL SELECT tablename, indexname, indexdef, '', '' FROM pg_indexes"
    " WHERE schemaname = 'public'"
)


@contextlib.contextmanager
def _app(backend: str) -> Iterator[ServedApp]:
    with tempfile.TemporaryDirectory(prefix="mrtrweb-set-up-once-") as root:
        app = ServedApp(root=Path(root), env=app_environment(Path(root)))
        if backend == "sqlite":
            yield app
            return
        with scratch_postgres("mrtrweb_set_up_once") as url:
            app.env["DATABASE_URL"] = url
            yield app


def _contents(app: ServedApp) -> tuple[list, dict[str, list]]:
    """The schema and the rows of ROWS, in an order of their own."""
    url = app.env.get("DATABASE_URL")
    if url:
        with psycopg.connect(url) as db:
            schema = db.execute(POSTGRES_SCHEMA).fetchall()
            rows = {t: db.execute(f"SELECT {c} FROM {t}").fetchall() for t, c in ROWS.items()}
    else:
        path = Path(app.env["MRTRWEB_VAR_DIR"]) / "db.sqlite3"
        with contextlib.closing(sqlite3.connect(path)) as db:
            schema = db.execute("SELECT type, name, sql FROM sqlite_master").fetchall()
            rows = {t: db.execute(f"SELECT {c} FROM {t}").fetchall() for t, c in ROWS.items()}
    return sorted(schema, key=repr), {t: sorted(r) for t, r in rows.items()}


def _files(app: ServedApp) -> dict[str, bytes]:
    root = Path(app.env["DJANGO_STATIC_ROOT"])
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _delete_groups(app: ServedApp) -> None:
    url = app.env.get("DATABASE_URL")
    statements = ("DELETE FROM auth_group_permissions", "DELETE FROM auth_group")
    if url:
        with psycopg.connect(url) as db:
            for statement in statements:
                db.execute(statement)
        return
    with contextlib.closing(sqlite3.connect(Path(app.env["MRTRWEB_VAR_DIR"]) / "db.sqlite3")) as db:
        for statement in statements:
            db.execute(statement)
        db.commit()


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_copied_app_has_what_migrate_and_collectstatic_make(backend: str) -> None:
    with _app(backend) as fresh, _app(backend) as copied:
        fresh.manage("migrate", "--noinput", "-v0", timeout=120)
        set_up_once.keep_migrated(fresh.env)  # kept, unless this process has one already
        assert set_up_once.copy_migrated(copied.env)

        schema, rows = _contents(copied)
        assert (schema, rows) == _contents(fresh)
        assert rows["auth_group"] and rows["django_migrations"]  # not two empty databases

        if backend == "sqlite":  # the static files are the same whatever the database
            fresh.manage("collectstatic", "--noinput", "-v0", timeout=120)
            set_up_once.keep_static(fresh.env)
            assert set_up_once.copy_static(copied.env)
            assert _files(copied) == _files(fresh)

        # A copy is a database of its own: what one app writes does not reach the next.
        _delete_groups(copied)
        assert _contents(copied)[1]["auth_group"] == []
        with _app(backend) as later:
            assert set_up_once.copy_migrated(later.env)
            assert _contents(later)[1]["auth_group"] == rows["auth_group"]
