"""``/readyz``: 200 while the database, the channel layer and the task queue answer; 503 naming
the check that failed otherwise, within a bounded time. ``/healthz`` never looks at them."""

from __future__ import annotations

import json
import logging
import time

import pytest
from cryptography.fernet import Fernet

from mrtrweb.core.readiness import CHECK_TIMEOUT
from tests.core.support import RunPython, strong_secret_key
from tests.peers.fixtures import free_port

CHECKS = {"database", "channel_layer", "task_queue"}

# Asks the app for /readyz and /healthz in a fresh process (settings are read once per
# process) and prints what it answered.
_PROBE = """
import json, time, django
django.setup()
from django.test.utils import setup_test_environment
setup_test_environment()
from django.test import Client
client = Client()
started = time.monotonic()
ready = client.get("/readyz")
seconds = time.monotonic() - started
health = client.get("/healthz")
print(json.dumps({"status": ready.status_code, "body": ready.json(), "seconds": seconds,
                  "health": health.status_code}))
"""


def _probe(run_python: RunPython, env: dict[str, str]) -> dict:
    result = run_python("-c", _PROBE, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.django_db
def test_ready_on_the_default_setup(client):
    response = client.get("/readyz")

    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ready"
    assert set(body["checks"]) == CHECKS
    assert all(check["ok"] for check in body["checks"].values())
    assert response["Cache-Control"].startswith("max-age=0")


@pytest.mark.django_db
def test_unready_when_the_redis_channel_layer_is_unreachable(client, settings, caplog):
    closed = free_port()
    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [f"redis://127.0.0.1:{closed}/0"]},
        }
    }

    started = time.monotonic()
    response = client.get("/readyz")
    elapsed = time.monotonic() - started

    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unavailable"
    assert body["checks"]["channel_layer"]["ok"] is False
    assert body["checks"]["channel_layer"]["error"]
    assert body["checks"]["database"]["ok"] is True
    assert body["checks"]["task_queue"]["ok"] is True
    assert elapsed < CHECK_TIMEOUT + 2
    # One warning saying why, not an ERROR per probe from django.request.
    assert [(r.name, r.levelname) for r in caplog.records if r.levelno >= logging.WARNING] == [
        ("mrtrweb.core.readiness", "WARNING")
    ]
    # Liveness does not depend on it.
    assert client.get("/healthz").status_code == 200


def test_unready_when_the_database_is_unreachable(run_python: RunPython):
    closed = free_port()

    # The pool still waits longer than the check does (which is what is proven), but not its
    # default 20 s: the probe's process ends only once that wait is over.
    shown = _probe(
        run_python,
        {
            "DATABASE_URL": f"postgres://postgres@127.0.0.1:{closed}/mrtrweb_nowhere",
            "MRTRWEB_DB_POOL_TIMEOUT": str(int(CHECK_TIMEOUT) * 2),
        },
    )

    assert shown["status"] == 503
    checks = shown["body"]["checks"]
    assert checks["database"]["ok"] is False
    assert checks["task_queue"]["ok"] is False
    assert checks["channel_layer"]["ok"] is True
    assert shown["seconds"] < CHECK_TIMEOUT + 2
    # The public answer names the failing check, not the server behind it.
    assert str(closed) not in json.dumps(shown["body"])
    assert shown["health"] == 200


def test_unready_when_the_task_table_is_missing(run_python: RunPython):
    # A fresh SQLite file without migrations: the database answers, the queue does not.
    shown = _probe(run_python, {})

    assert shown["status"] == 503
    checks = shown["body"]["checks"]
    assert checks["database"]["ok"] is True
    assert checks["task_queue"]["ok"] is False
    assert checks["channel_layer"]["ok"] is True


def test_probes_over_plain_http_are_not_redirected_in_production(run_python: RunPython):
    # Load balancers probe over HTTP; an HTTPS redirect would read as "down".
    shown = _probe(
        run_python,
        {
            "DJANGO_ENV": "production",
            "DJANGO_SECRET_KEY": strong_secret_key(),
            "MRTRWEB_FERNET_KEYS": Fernet.generate_key().decode(),
        },
    )

    assert shown["health"] == 200
    assert shown["status"] == 503  # a fresh, unmigrated database: answered, not redirected
