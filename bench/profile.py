"""``python -m bench --profile``: where the time of the slow paths goes (pyinstrument).

Runs in the bench process after the figures, with the test client and tasks delivered inline,
so one profile holds a whole round: the answer POST, the engine, the MCP client and the
database. Reports are written beside the JSON as ``profile-<backend>-<path>.txt``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from . import seed
from .stack import ADMIN, PERSON


def _client(username: str) -> Any:
    from django.contrib.auth import get_user_model
    from django.test import Client

    from tests.support.second_factor import verify_client

    client = Client()
    user = get_user_model().objects.get(username=username)
    client.force_login(user)
    verify_client(client, user)  # as after the admin's second factor
    return client


def _answer_fields(client: Any, round_id: int) -> dict[str, str]:
    from .people import form_fields

    page = client.get(f"/rounds/{round_id}/")
    return {**form_fields(page.content.decode()), "action": "accept"}


def profile(out_dir: Path, backend: str, context: dict[str, Any], rounds: int = 30) -> list[str]:
    from asgiref.local import Local
    from django.conf import settings
    from django_tasks import task_backends
    from django_tasks.backends.immediate import ImmediateBackend
    from pyinstrument import Profiler

    from mrtrweb.calls.tasks import deliver_round

    # Deliver inline, in this process, so the profile sees the resubmission too.
    settings.TASKS = {"default": {"BACKEND": "django_tasks.backends.immediate.ImmediateBackend"}}
    task_backends._settings = None
    task_backends.__dict__.pop("settings", None)
    task_backends._connections = Local(task_backends.thread_critical)
    if not isinstance(deliver_round.get_backend(), ImmediateBackend):
        raise RuntimeError("profiling needs answers delivered inline")
    person = _client(PERSON)
    parked = []
    for _ in range(rounds + 3):
        parked.append(seed.park(context).rounds.get().pk)
    fields = _answer_fields(person, parked[0])
    for round_id in parked[:3]:  # warm
        person.post(f"/rounds/{round_id}/", fields)

    written = []
    profiler = Profiler(interval=0.0005)
    with profiler:
        for round_id in parked[3:]:
            person.post(f"/rounds/{round_id}/", fields)
    written.append(_write(profiler, out_dir / f"profile-{backend}-answer-round.txt"))

    admin = _client(ADMIN)
    for name, client, url in (
        ("inbox", person, "/inbox/"),
        ("dashboard", admin, "/dashboard/rounds/"),
        ("start", person, "/calls/start/bench/?tool=confirm"),
    ):
        client.get(url)
        profiler = Profiler(interval=0.0005)
        with profiler:
            for _ in range(10):
                client.get(url)
        written.append(_write(profiler, out_dir / f"profile-{backend}-{name}.txt"))
    return written


def _write(profiler: Any, path: Path) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(profiler.output_text(unicode=False, color=False, show_all=False))
    return str(path)
