"""``manage.py mcp_call`` run as a script would: stdout is its JSON alone, whatever else the
call prints (the console email of a round, logs) goes to stderr."""

from __future__ import annotations

import json
from pathlib import Path

from tests.core.support import python_runner
from tests.peers.fixtures import Peer

SET_UP = """
import django; django.setup()
from django.contrib.auth import get_user_model
from mrtrweb.servers.models import Connection
get_user_model().objects.create_superuser("root", email="root@example.org", password="pw-1234-x")
Connection.objects.create(name="demo", url={url!r})
"""


def test_stdout_is_the_json_alone(demo_server: Peer, tmp_path: Path) -> None:
    run = python_runner(tmp_path)
    environment = {
        "DJANGO_EMAIL_BACKEND": "django.core.mail.backends.console.EmailBackend",
        "DJANGO_LOG_LEVEL": "INFO",
    }
    for step in (["manage.py", "migrate", "-v0"], ["-c", SET_UP.format(url=demo_server.url)]):
        done = run(*step, env=environment, timeout=120)
        assert done.returncode == 0, done.stderr

    done = run(
        "manage.py",
        "mcp_call",
        "--server",
        "demo",
        "--tool",
        "purchase",
        "--arguments",
        '{"item": "Monitor arm"}',
        env=environment,
        timeout=60,
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout.count("\n") == 1, done.stdout
    printed = json.loads(done.stdout)
    assert printed["status"] == "waiting" and printed["round"]["keys"] == ["shipping"]
    # The round's email (the admin who started it answers it) went to stderr instead.
    assert "To: root@example.org" in done.stderr
    assert "Subject: [mrtrweb]" in done.stderr
