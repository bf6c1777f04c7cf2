import os
import stat
from pathlib import Path
from typing import Any

import pytest

from mrtrweb import env


def test_database_url_selects_postgresql_with_all_its_parts(tmp_path: Path):
    config = env.database_config("postgres://app:s%40cret@db.internal:6543/mrtr", tmp_path / "x")

    assert config["ENGINE"] == "django.db.backends.postgresql"
    assert (config["NAME"], config["USER"], config["PASSWORD"]) == ("mrtr", "app", "s@cret")
    assert (config["HOST"], int(config["PORT"])) == ("db.internal", 6543)
    assert config["CONN_MAX_AGE"] == 0
    assert config["CONN_HEALTH_CHECKS"] is True


@pytest.mark.parametrize("url", [None, ""])
def test_without_database_url_the_embedded_sqlite_file_is_used(tmp_path: Path, url):
    config = env.database_config(url, tmp_path / "db.sqlite3")

    assert config["ENGINE"] == "mrtrweb.db.sqlite3"
    assert config["NAME"] == tmp_path / "db.sqlite3"
    assert config["OPTIONS"]["transaction_mode"] == "IMMEDIATE"


def _synchronous_of(config: dict, blocker: Any) -> int:
    """``PRAGMA synchronous`` on a real connection made from ``config`` by Django (the app's
    SQLite backend, its init command run as on every connection): 2 is FULL, 1 NORMAL."""
    from django.db.utils import ConnectionHandler

    from mrtrweb.db.sqlite3.base import pool

    handler = ConnectionHandler({"default": config})
    connection = handler["default"]
    try:
        with blocker.unblock(), connection.cursor() as cursor:
            cursor.execute("PRAGMA synchronous")
            return cursor.fetchone()[0]
    finally:
        connection.close()
        pool.drain()  # not kept for the next thread: its file goes with tmp_path


def test_the_embedded_sqlite_file_flushes_every_commit_by_default(
    tmp_path: Path, django_db_blocker: Any
):
    """A commit must survive a power cut, as PostgreSQL's does: an answer a person was told
    was sent, a delivery's claim (lost, the round would be sent twice)."""
    assert env.sqlite_synchronous({}) == "FULL"
    config = env.database_config(None, tmp_path / "db.sqlite3")

    assert _synchronous_of(config, django_db_blocker) == 2


@pytest.mark.parametrize("raw", ["normal", " NORMAL "])
def test_an_operator_may_choose_normal_for_a_database_whose_last_seconds_may_be_lost(
    tmp_path: Path, raw: str, django_db_blocker: Any
):
    chosen = env.sqlite_synchronous({"MRTRWEB_SQLITE_SYNCHRONOUS": raw})
    config = env.database_config(None, tmp_path / "db.sqlite3", sqlite_synchronous=chosen)

    assert chosen == "NORMAL"
    assert _synchronous_of(config, django_db_blocker) == 1


@pytest.mark.parametrize("raw", ["OFF", "extra", "1"])
def test_other_synchronous_settings_are_refused(raw: str):
    with pytest.raises(env.EnvError, match="MRTRWEB_SQLITE_SYNCHRONOUS"):
        env.sqlite_synchronous({"MRTRWEB_SQLITE_SYNCHRONOUS": raw})


@pytest.mark.django_db
def test_the_apps_own_connections_use_the_chosen_setting():
    """Through the settings and the pooled connections the app uses (``make test`` chooses
    NORMAL: its databases are thrown away)."""
    from django.db import connection

    if connection.vendor != "sqlite":
        pytest.skip("the embedded SQLite database only")
    expected = {"FULL": 2, "NORMAL": 1}[env.sqlite_synchronous(os.environ)]
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA synchronous")
        assert cursor.fetchone()[0] == expected


def test_redis_url_selects_the_redis_channel_layer():
    layers = env.channel_layers("redis://127.0.0.1:6379/3")

    assert layers["default"]["BACKEND"] == "mrtrweb.live.redis_layer.WaitingRedisChannelLayer"
    (host,) = layers["default"]["CONFIG"]["hosts"]
    assert host["address"] == "redis://127.0.0.1:6379/3"


def test_the_redis_layer_reads_longer_than_its_consumers_block():
    """A consumer waits for messages in a blocking pop; a read timeout no longer than that
    pop would crash every socket idle for a few seconds."""
    from channels_redis.core import RedisChannelLayer

    (host,) = env.channel_layers("redis://127.0.0.1:6379/3")["default"]["CONFIG"]["hosts"]
    assert host["socket_timeout"] > RedisChannelLayer.brpop_timeout


@pytest.mark.parametrize("url", [None, ""])
def test_without_redis_url_the_channel_layer_is_in_memory(url):
    assert env.channel_layers(url) == {
        "default": {"BACKEND": "mrtrweb.live.layers.SweptInMemoryChannelLayer"}
    }


def test_secret_key_from_the_environment_wins(tmp_path: Path):
    key_file = tmp_path / "secret_key"

    assert env.secret_key({"DJANGO_SECRET_KEY": "from-env"}, key_file) == "from-env"
    assert not key_file.exists()


def test_secret_key_is_generated_once_into_a_private_file(tmp_path: Path):
    key_file = tmp_path / "var" / "secret_key"

    first = env.secret_key({}, key_file)
    second = env.secret_key({"DJANGO_SECRET_KEY": "  "}, key_file)

    assert first == second
    assert len(first) >= 50
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert [p.name for p in key_file.parent.iterdir()] == ["secret_key"]  # no temp left over


def test_an_empty_key_file_is_an_error_not_a_new_key(tmp_path: Path):
    key_file = tmp_path / "secret_key"
    key_file.write_text("\n")

    with pytest.raises(env.EnvError, match="empty"):
        env.secret_key({}, key_file)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("1", True), ("true", True), ("YES", True), ("on", True), ("0", False), ("off", False)],
)
def test_env_bool_words(raw: str, expected: bool):
    assert env.env_bool({"X": raw}, "X") is expected


def test_env_bool_default_and_typos():
    assert env.env_bool({}, "X", default=True) is True
    with pytest.raises(env.EnvError, match="X='ture'"):
        env.env_bool({"X": "ture"}, "X")


def test_env_int():
    assert env.env_int({}, "N", 7) == 7
    assert env.env_int({"N": " 42 "}, "N", 7) == 42
    with pytest.raises(env.EnvError):
        env.env_int({"N": "forty"}, "N", 7)


def test_env_list_default_empty_and_spacing():
    assert env.env_list({}, "H", ("a", "b")) == ["a", "b"]
    assert env.env_list({"H": ""}, "H", ("a",)) == []
    assert env.env_list({"H": " x.example , ,y.example"}, "H") == ["x.example", "y.example"]


@pytest.mark.parametrize(
    ("value", "expected"),
    [("production", True), ("PROD", True), ("development", False), ("", False)],
)
def test_is_production(value: str, expected: bool):
    assert env.is_production({"DJANGO_ENV": value}) is expected


def test_fernet_keys_from_the_environment_keep_their_order(tmp_path: Path):
    keys = env.fernet_keys({"MRTRWEB_FERNET_KEYS": "new-key, old-key"}, tmp_path / "fernet_key")

    assert keys == ["new-key", "old-key"]
    assert not (tmp_path / "fernet_key").exists()


def test_a_local_fernet_key_is_generated_once_and_usable(tmp_path: Path):
    from cryptography.fernet import Fernet

    key_file = tmp_path / "fernet_key"
    first = env.fernet_keys({}, key_file)
    second = env.fernet_keys({}, key_file)

    assert first == second and len(first) == 1
    assert Fernet(first[0]).decrypt(Fernet(first[0]).encrypt(b"x")) == b"x"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600


def test_postgresql_connects_with_a_bounded_timeout(tmp_path: Path):
    config = env.database_config("postgres://app@db.internal/mrtr", tmp_path / "x")

    assert config["OPTIONS"]["connect_timeout"] == env.POSTGRES_CONNECT_TIMEOUT


def test_postgresql_connections_come_from_a_pool_unless_its_size_is_zero(tmp_path: Path):
    pooled = env.database_config("postgres://app@db.internal/mrtr", tmp_path, pool_size=4)
    assert pooled["OPTIONS"]["pool"]["max_size"] == 4
    # A crowd of requests queues for a connection as long as SQLite waits for its lock.
    assert pooled["OPTIONS"]["pool"]["timeout"] == 20
    patient = env.database_config(
        "postgres://app@db.internal/mrtr", tmp_path, pool_size=4, pool_timeout=45
    )
    assert patient["OPTIONS"]["pool"]["timeout"] == 45
    assert pooled["CONN_MAX_AGE"] == 0  # Django refuses persistent connections with a pool
    unpooled = env.database_config("postgres://app@db.internal/mrtr", tmp_path, pool_size=0)
    assert "pool" not in unpooled["OPTIONS"]


def test_postgresql_prepares_its_statements_when_given_a_threshold(tmp_path: Path):
    # Django's defaults unless asked: parameters bound on the client, nothing prepared.
    unprepared = env.database_config("postgres://app@db.internal/mrtr", tmp_path)
    assert "server_side_binding" not in unprepared["OPTIONS"]
    assert "prepare_threshold" not in unprepared["OPTIONS"]
    prepared = env.database_config("postgres://app@db.internal/mrtr", tmp_path, prepare_threshold=5)
    # psycopg prepares only statements the server binds.
    assert prepared["OPTIONS"]["server_side_binding"] is True
    assert prepared["OPTIONS"]["prepare_threshold"] == 5
    sqlite = env.database_config(None, tmp_path / "db.sqlite3", prepare_threshold=5)
    assert "prepare_threshold" not in sqlite["OPTIONS"]


def test_a_connect_timeout_in_the_url_wins(tmp_path: Path):
    config = env.database_config("postgres://app@db.internal/mrtr?connect_timeout=2", tmp_path)

    assert int(config["OPTIONS"]["connect_timeout"]) == 2


def test_the_channel_prefix_namespaces_the_redis_layer():
    layers = env.channel_layers("redis://127.0.0.1:6379/3", prefix="blue:")

    assert layers["default"]["CONFIG"]["prefix"] == "blue:"
    assert "prefix" not in env.channel_layers("redis://127.0.0.1:6379/3")["default"]["CONFIG"]


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({}, "plain"),
        ({"DJANGO_ENV": "production"}, "json"),
        ({"DJANGO_LOG_FORMAT": "JSON"}, "json"),
        ({"DJANGO_ENV": "production", "DJANGO_LOG_FORMAT": "plain"}, "plain"),
    ],
)
def test_log_format_is_json_in_production_and_plain_otherwise(environ, expected):
    assert env.log_format(environ) == expected


def test_an_unknown_log_format_is_refused():
    with pytest.raises(env.EnvError, match="DJANGO_LOG_FORMAT"):
        env.log_format({"DJANGO_LOG_FORMAT": "xml"})


def test_env_float_positive_unless_zero_is_allowed():
    assert env.env_float({}, "X", 2.0) == 2.0
    assert env.env_float({"X": "0.5"}, "X", 2.0) == 0.5
    with pytest.raises(env.EnvError, match="must be a positive number"):
        env.env_float({"X": "0"}, "X", 2.0)
    # A wait of zero means "do not wait" (MRTRWEB_ANSWER_WAIT), not a typo.
    assert env.env_float({"X": "0"}, "X", 2.0, allow_zero=True) == 0.0
    with pytest.raises(env.EnvError, match="zero or a positive number"):
        env.env_float({"X": "-1"}, "X", 2.0, allow_zero=True)
    with pytest.raises(env.EnvError, match="not a number"):
        env.env_float({"X": "soon"}, "X", 2.0, allow_zero=True)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (None, ["username", "ip_address"]),
        ("", ["username", "ip_address"]),
        ("account", ["username"]),
        ("Address", ["ip_address"]),
        ("account+address", [["username", "ip_address"]]),
        (" account + address , address ", [["username", "ip_address"], "ip_address"]),
    ],
)
def test_signin_lockout_in_plain_words(raw, expected):
    environ = {} if raw is None else {"MRTRWEB_SIGNIN_LOCKOUT": raw}
    assert env.signin_lockout(environ) == expected


@pytest.mark.parametrize("raw", ["user", "account,", "account+ip", "account++address"])
def test_an_unknown_signin_lockout_is_refused(raw):
    with pytest.raises(env.EnvError, match="MRTRWEB_SIGNIN_LOCKOUT"):
        env.signin_lockout({"MRTRWEB_SIGNIN_LOCKOUT": raw})
