"""Smoke tests of the scale-out setup against the real PostgreSQL and Redis on this machine.

.ci/run starts both; elsewhere a missing service skips its test instead of failing it
(tests/support/services.py).
"""

import secrets
from collections.abc import Iterator

import psycopg
import pytest
import redis
from channels_redis.core import RedisChannelLayer

from tests.core.support import RunPython
from tests.support.services import REDIS_URL, scratch_postgres, unavailable


@pytest.fixture
def scratch_postgres_url() -> Iterator[str]:
    """A new, empty database on the server, dropped afterwards."""
    with scratch_postgres("mrtrweb_smoke") as url:
        yield url


def test_migrations_and_admin_bootstrap_run_on_postgresql(
    run_python: RunPython, scratch_postgres_url: str
):
    env = {"DATABASE_URL": scratch_postgres_url}

    for args in (
        ("manage.py", "check", "--database", "default"),
        ("manage.py", "migrate", "--noinput"),
        ("manage.py", "ensure_admin"),
    ):
        result = run_python(*args, env=env)
        assert result.returncode == 0, f"{args}: {result.stdout}{result.stderr}"

    with psycopg.connect(scratch_postgres_url) as conn:
        superusers = conn.execute("SELECT username FROM auth_user WHERE is_superuser").fetchall()
        task_table = conn.execute("SELECT to_regclass('django_tasks_database_dbtaskresult')")
        assert task_table.fetchone()[0] is not None
    assert superusers == [("admin",)]


async def test_redis_channel_layer_carries_a_message():
    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=5).ping()
    except redis.RedisError as error:
        unavailable("Redis", error)
    # Two layers stand for two processes: one sends, the other receives.
    sender = RedisChannelLayer(hosts=[REDIS_URL], prefix="mrtrweb-test")
    receiver = RedisChannelLayer(hosts=[REDIS_URL], prefix="mrtrweb-test")
    try:
        channel = await receiver.new_channel()
        payload = secrets.token_hex(8)
        await sender.send(channel, {"type": "smoke.test", "payload": payload})
        message = await receiver.receive(channel)
    finally:
        await sender.close_pools()
        await receiver.close_pools()

    assert message == {"type": "smoke.test", "payload": payload}
