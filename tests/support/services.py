"""The machine's PostgreSQL and Redis, as the tests use them: a scratch database per use, and
one rule for a missing service (skipped with the reason, failed under ``CI``, which starts
both: CI must not go green without them)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
from psycopg import sql

POSTGRES_URL = os.environ.get(
    "MRTRWEB_TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres"
)
REDIS_URL = os.environ.get("MRTRWEB_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


def unavailable(service: str, error: Exception | str) -> NoReturn:
    """Skip the test for want of ``service``; fail it under ``CI``."""
    message = f"{service} is not reachable: {error}"
    if os.environ.get("CI"):
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


def _admin() -> psycopg.Connection:
    try:
        return psycopg.connect(POSTGRES_URL, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as error:
        unavailable("PostgreSQL", error)


def create_database(name: str, *, template: str | None = None) -> None:
    """``CREATE DATABASE name`` on the server, a copy of ``template`` when given (which nobody
    may be connected to)."""
    statement = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
    if template:
        statement += sql.SQL(" TEMPLATE {}").format(sql.Identifier(template))
    with _admin() as admin:
        admin.execute(statement)


def drop_database(name: str) -> None:
    """Drop ``name`` if it is there, with ``FORCE``: connections a killed process left behind
    do not keep it."""
    with _admin() as admin:
        admin.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )


def database_url(name: str) -> str:
    return urlunsplit(urlsplit(POSTGRES_URL)._replace(path=f"/{name}"))


@contextmanager
def scratch_postgres(prefix: str) -> Iterator[str]:
    """A new, empty database ``<prefix>_<random>`` on the server; yields its URL and drops it
    afterwards."""
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    create_database(name)
    try:
        yield database_url(name)
    finally:
        drop_database(name)
