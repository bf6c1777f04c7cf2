"""The app served for real (uvicorn on 127.0.0.1, a fresh SQLite database in a temp dir), for
the tests that talk to the API over HTTP: schemathesis, the example script, waiting without a
thread. Its processes are started, awaited and stopped with tests/support/processes.py, as the
browser tests' are; the data seeded here is the API's own.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.peers.fixtures import Peer
from tests.support.processes import (
    ServedApp,
    app_environment,
    start_db_worker,
    start_uvicorn,
    wait_until_served,
)

PERSON = ("ann", "ann-api-pw-1")

_SEED = """
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from mrtrweb.api.models import ApiToken
from mrtrweb.calls import engine
from mrtrweb.servers.models import Connection, ToolExposure

User = get_user_model()
ann = User.objects.create_user({person!r}, password={password!r})
ann.groups.add(Group.objects.get(name="End users"))
otto = User.objects.create_user("otto")
otto.groups.add(Group.objects.get(name="Operators"))
from django.utils import timezone
# Tested by an operator: end users are offered no untested server.
peer = Connection.objects.create(name="peer", url={peer_url!r}, tested_at=timezone.now())
for tool in ("approve_deploy", "echo"):
    ToolExposure.objects.create(connection=peer, tool_name=tool, exposed=True)
# A finished call, so requests for an existing id never wait.
engine.start_call(
    connection=peer, method="tools/call", target="echo", arguments={{"text": "x"}}, user=ann
)
print(ApiToken.issue(ann, "tests")[1])
print(ApiToken.issue(otto, "tests")[1])
"""


@dataclass
class ApiApp(ServedApp):
    token: str = ""  # ann's: an end user who may start approve_deploy and echo on "peer"
    operator_token: str = ""


def serve(peer: Peer, *, worker: bool, pages: bool = False, **env: str) -> Iterator[ApiApp]:
    """Serve the app; ``worker`` runs db_worker beside it (deliveries, webhooks), ``pages``
    collects the static files the HTML pages need; ``env`` is added to its environment."""
    root = Path(tempfile.mkdtemp(prefix="mrtrweb-api-"))
    # Deliveries run only in the db_worker started here (when asked for), never in uvicorn.
    app = ApiApp(root=root, env=app_environment(root, MRTRWEB_INPROCESS_WORKER="0", **env))
    try:
        app.migrate(static=pages)
        seed = _SEED.format(person=PERSON[0], password=PERSON[1], peer_url=peer.url)
        app.token, app.operator_token = app.shell(seed, timeout=120).split()[-2:]
        app.pick_port()
        start_uvicorn(app, port=app.port, lifespan=False)
        if worker:
            start_db_worker(app, interval=0.2)
        wait_until_served(app)
        yield app
    finally:
        app.stop()
        shutil.rmtree(root, ignore_errors=True)
