"""The settings module as a deployment sees it: a fresh process per environment."""

import json

import pytest
from cryptography.fernet import Fernet

from tests.core.support import RunPython, strong_secret_key

SHOW_SETTINGS = """
import json
from django.conf import settings
db = settings.DATABASES["default"]
print(json.dumps({
    "engine": db["ENGINE"], "name": str(db["NAME"]), "host": db.get("HOST"),
    "layer": settings.CHANNEL_LAYERS["default"]["BACKEND"],
    "layer_hosts": settings.CHANNEL_LAYERS["default"].get("CONFIG", {}).get("hosts"),
    "debug": settings.DEBUG, "allowed_hosts": settings.ALLOWED_HOSTS,
    "tasks": settings.TASKS["default"]["BACKEND"],
    "hsts": getattr(settings, "SECURE_HSTS_SECONDS", 0),
}))
"""


def show_settings(run_python: RunPython, **env: str) -> dict:
    result = run_python("-c", SHOW_SETTINGS, env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_embedded_defaults(run_python: RunPython, tmp_path):
    shown = show_settings(run_python)

    assert shown["engine"] == "mrtrweb.db.sqlite3"
    assert shown["name"] == str(tmp_path / "var" / "db.sqlite3")
    assert shown["layer"] == "mrtrweb.live.layers.SweptInMemoryChannelLayer"
    assert shown["debug"] is False
    assert shown["allowed_hosts"] == ["localhost", "127.0.0.1", "[::1]"]
    assert shown["tasks"] == "django_tasks_db.DatabaseBackend"
    assert shown["hsts"] == 0
    assert (tmp_path / "var" / "secret_key").is_file()


def test_database_url_and_redis_url_switch_to_scale_out(run_python: RunPython):
    shown = show_settings(
        run_python,
        DATABASE_URL="postgres://mrtr@db.internal:5432/mrtr",
        REDIS_URL="redis://cache.internal:6379/0",
        DJANGO_ALLOWED_HOSTS="mrtr.example",
        DJANGO_DEBUG="1",
    )

    assert (shown["engine"], shown["name"], shown["host"]) == (
        "django.db.backends.postgresql",
        "mrtr",
        "db.internal",
    )
    assert shown["layer"] == "mrtrweb.live.redis_layer.WaitingRedisChannelLayer"
    assert [host["address"] for host in shown["layer_hosts"]] == ["redis://cache.internal:6379/0"]
    assert shown["allowed_hosts"] == ["mrtr.example"]
    assert shown["debug"] is True


def test_production_passes_the_deployment_checklist(run_python: RunPython):
    result = run_python(
        "manage.py",
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
        env={
            "DJANGO_ENV": "production",
            "DJANGO_SECRET_KEY": strong_secret_key(),
            "DJANGO_ALLOWED_HOSTS": "mrtr.example",
            "MRTRWEB_FERNET_KEYS": Fernet.generate_key().decode(),
        },
    )

    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_the_embedded_setup_is_not_deployment_ready(run_python: RunPython):
    # The converse: without DJANGO_ENV=production the checklist must object, or the test
    # above would prove nothing.
    result = run_python("manage.py", "check", "--deploy", "--fail-level", "WARNING")

    assert result.returncode != 0
    assert "SECURE_HSTS_SECONDS" in result.stdout + result.stderr


@pytest.mark.parametrize(
    ("env", "complaint"),
    [
        ({"DJANGO_SECRET_KEY": ""}, "needs DJANGO_SECRET_KEY"),
        ({"DJANGO_SECRET_KEY": "x" * 60, "DJANGO_DEBUG": "1"}, "DJANGO_DEBUG=1 is refused"),
        ({"DJANGO_SECRET_KEY": "x" * 60}, "needs MRTRWEB_FERNET_KEYS"),
    ],
)
def test_production_refuses_unsafe_configuration(run_python: RunPython, env, complaint):
    result = run_python("manage.py", "check", env={"DJANGO_ENV": "production", **env})

    assert result.returncode != 0
    assert complaint in result.stderr


WEBHOOK_SETTINGS = """
import json
from django.conf import settings
print(json.dumps([
    settings.MRTRWEB_WEBHOOK_ALLOW_PRIVATE, settings.MRTRWEB_WEBHOOK_ALLOWED_NETWORKS,
    settings.MRTRWEB_WEBHOOK_MAX_ATTEMPTS, settings.MRTRWEB_WEBHOOK_TIMEOUT,
]))
"""


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, [False, [], 6, 10.0]),
        # A developer's receiver on 127.0.0.1 just works; a deployment must opt in.
        ({"DJANGO_DEBUG": "1"}, [True, [], 6, 10.0]),
        (
            {
                "MRTRWEB_WEBHOOK_ALLOW_PRIVATE": "yes",
                "MRTRWEB_WEBHOOK_ALLOWED_NETWORKS": "10.2.0.0/16, 10.3.0.0/16",
                "MRTRWEB_WEBHOOK_MAX_ATTEMPTS": "3",
                "MRTRWEB_WEBHOOK_TIMEOUT": "2.5",
            },
            [True, ["10.2.0.0/16", "10.3.0.0/16"], 3, 2.5],
        ),
    ],
)
def test_webhook_settings_come_from_the_environment(run_python: RunPython, env, expected):
    result = run_python("-c", WEBHOOK_SETTINGS, env=env)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == expected


def test_a_bad_webhook_setting_stops_the_start(run_python: RunPython):
    result = run_python("-c", WEBHOOK_SETTINGS, env={"MRTRWEB_WEBHOOK_BACKOFF": "-1"})
    assert result.returncode != 0
    assert "MRTRWEB_WEBHOOK_BACKOFF" in result.stderr
