"""P6: many people watching: open websockets on one web process, one event for many of them.

``people`` people are written straight into the bench database (users, sessions, one call
each, waiting: no HTTP sign-ins), and each opens two sockets from this process with the
``websockets`` package, as their browser would: the inbox (``/ws/inbox/``, every page of a
signed-in person holds one) and a call page (``/ws/calls/<id>/``, a call of their own).
``concerned`` of them are the members of a group that a connection routes its rounds to.

The event is real: the bench person starts the bench tool on that connection over HTTP; its
round parks, routed to the group, and the engine tells each member's inbox (``round_parked``).
Latency is a frame's arrival minus its ``data-live-at`` (published), per concerned person.
Also measured: the web process's memory (VmRSS, VmHWM) idle and with every socket open, and
the inbox page (median of repeats) idle and with every socket open.
"""

from __future__ import annotations

import asyncio
import re
import resource
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

from .live import AT, KIND, open_socket
from .people import Person, form_fields
from .phases import guarded
from .procfs import cpu_seconds, rss_kb
from .stack import PASSWORD, TOOL, Stack
from .stats import summary

WATCH_CONNECTION = "bench-watchers"
WATCH_GROUP = "bench-watchers"
USERNAME = "watcher-{:05d}"
_ROUND_URL = re.compile(r"/rounds/(\d+)/")


def raise_fd_limit() -> int:
    """Open files allowed to this process (and the servers it starts after): its hard limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        wanted = hard if hard != resource.RLIM_INFINITY else 65536
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
        return wanted
    return soft


@dataclass
class Watcher:
    user_id: int
    session_key: str
    call_id: int
    concerned: bool


# -- seeding (synchronous, in the bench process) -------------------------------------------------


def seed(people: int, concerned: int, context: dict[str, Any]) -> list[Watcher]:
    """``people`` users with a session and a call each (waiting); the first ``concerned`` in
    a group that the ``bench-watchers`` connection routes its rounds to."""
    from django.conf import settings
    from django.contrib.auth import (
        BACKEND_SESSION_KEY,
        HASH_SESSION_KEY,
        SESSION_KEY,
        get_user_model,
    )
    from django.contrib.auth.hashers import make_password
    from django.contrib.auth.models import Group
    from django.contrib.sessions.backends.db import SessionStore
    from django.contrib.sessions.models import Session
    from django.db import transaction
    from django.utils import timezone
    from django.utils.crypto import get_random_string

    from mrtrweb.calls.models import Call
    from mrtrweb.servers.catalog import refresh_catalog
    from mrtrweb.servers.models import Connection, Routing, ToolExposure

    User = get_user_model()
    # One hash for all: hashing a thousand passwords would take minutes and measure nothing.
    password = make_password(PASSWORD)
    backend = "mrtrweb.accounts.backends.AccountBackend"
    assert backend in settings.AUTHENTICATION_BACKENDS
    source = context["connection"]
    now = timezone.now()
    with transaction.atomic():
        group = Group.objects.create(name=WATCH_GROUP)
        names = [USERNAME.format(i) for i in range(people)]
        User.objects.bulk_create([User(username=name, password=password) for name in names])
        users = list(User.objects.filter(username__in=names).order_by("username"))
        group.user_set.through.objects.bulk_create(
            [group.user_set.through(user=u, group=group) for u in users[:concerned]]
        )
        store = SessionStore()
        sessions = []
        for user in users:
            data = {
                SESSION_KEY: str(user.pk),
                BACKEND_SESSION_KEY: backend,
                HASH_SESSION_KEY: user.get_session_auth_hash(),
            }
            sessions.append(
                Session(
                    session_key=get_random_string(32, "abcdefghijklmnopqrstuvwxyz0123456789"),
                    session_data=store.encode(data),
                    expire_date=now + timezone.timedelta(seconds=settings.SESSION_COOKIE_AGE),
                )
            )
        Session.objects.bulk_create(sessions)
        Call.objects.bulk_create(
            [
                Call(
                    connection=source,
                    method=Call.Method.TOOL,
                    target=TOOL,
                    arguments_json="{}",
                    tool=source.catalog["tools"][0],
                    started_by=user,
                    # Waiting on a person, as most watched calls are. Not running and
                    # unsent: the scheduler would send those, parking a round
                    # for every watcher while P6 measures (engine.due).
                    status=Call.Status.WAITING,
                    sent_at=now,
                    created_at=now,
                )
                for user in users
            ]
        )
        calls = dict(Call.objects.filter(started_by__in=users).values_list("started_by_id", "pk"))
        watched = Connection.objects.create(
            name=WATCH_CONNECTION,
            title="Bench server, routed to a group",
            url=source.url,
            routing=Routing.GROUP,
            route_group=group,
        )
    refresh_catalog(watched)
    ToolExposure.objects.create(connection=watched, tool_name=TOOL, exposed=True)
    return [
        Watcher(user.pk, session.session_key, calls[user.pk], index < concerned)
        for index, (user, session) in enumerate(zip(users, sessions, strict=True))
    ]


# -- the sockets ---------------------------------------------------------------------------------


@dataclass
class Listener:
    """Every socket's frames: which kinds arrived when, per person."""

    arrivals: dict[int, list[tuple[str, float, float | None]]] = field(default_factory=dict)
    closed: int = 0

    async def read(self, socket: Any, user_id: int) -> None:
        seen = self.arrivals.setdefault(user_id, [])
        try:
            async for frame in socket:
                arrived = time.time()
                text = frame if isinstance(frame, str) else frame.decode()
                kind = KIND.search(text)
                at = AT.search(text)
                seen.append(
                    (kind.group(1) if kind else "", arrived, float(at.group(1)) if at else None)
                )
        except Exception:
            pass
        self.closed += 1


async def _open(run: Stack, watcher: Watcher, path: str) -> Any:
    return await open_socket(
        run,
        watcher.session_key,
        path,
        open_timeout=60,
        # As a browser: no compression negotiated by default in this measurement's client.
        compression=None,
        max_queue=None,
    )


async def open_all(
    run: Stack, watchers: list[Watcher], listener: Listener, parallel: int = 50
) -> tuple[list[Any], list[asyncio.Task[None]], float]:
    """Both sockets of every watcher, ``parallel`` at a time; returns sockets, readers and
    the seconds it took."""
    sockets: list[Any] = []
    readers: list[asyncio.Task[None]] = []
    gate = asyncio.Semaphore(parallel)

    async def both(watcher: Watcher) -> None:
        async with gate:
            for path in ("/ws/inbox/?page=/inbox/", f"/ws/calls/{watcher.call_id}/?view=call"):
                socket = await _open(run, watcher, path)
                sockets.append(socket)
                readers.append(asyncio.create_task(listener.read(socket, watcher.user_id)))

    started = time.perf_counter()
    await asyncio.gather(*(both(w) for w in watchers))
    return sockets, readers, time.perf_counter() - started


async def close_all(sockets: list[Any], readers: list[asyncio.Task[None]]) -> None:
    await asyncio.gather(*(s.close() for s in sockets), return_exceptions=True)
    for task in readers:
        task.cancel()
    await asyncio.gather(*readers, return_exceptions=True)


# -- what is measured ----------------------------------------------------------------------------


async def _page_ms(person: Person, path: str, repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        response = await person.http.get(path)
        response.raise_for_status()
        times.append((time.perf_counter() - started) * 1000)
    return times


async def _route_to_group(person: Person) -> float:
    """The bench person starts the tool on the group-routed connection; its round parks for
    the group. Returns when the start's answer came back (time.time())."""
    path = f"/calls/start/{WATCH_CONNECTION}/?tool={TOOL}"
    page = await person.http.get(path)
    page.raise_for_status()
    fields = {k: v for k, v in form_fields(page.text).items() if k != "csrfmiddlewaretoken"}
    fields["csrfmiddlewaretoken"] = person.csrf
    response = await person.http.post(
        path, data=fields, headers={"Referer": person.base_url + path}
    )
    if response.status_code != 303:
        raise RuntimeError(f"start refused: {response.status_code} {response.text[:300]}")
    return time.time()


def _web_memory(run: Stack) -> dict[str, float | None]:

    figures = rss_kb(run.web_pid)
    rss, peak = figures["rss_kb"], figures["peak_rss_kb"]
    return {
        "rss_mb": rss / 1024 if rss is not None else None,
        "peak_rss_mb": peak / 1024 if peak is not None else None,
    }


async def measure(
    run: Stack,
    person: Person,
    context: dict[str, Any],
    *,
    people: int,
    concerned: int,
    events: int,
    page_repeats: int,
) -> dict[str, Any]:
    from asgiref.sync import sync_to_async

    raise_fd_limit()
    watchers = await sync_to_async(seed, thread_sensitive=True)(people, concerned, context)
    figures: dict[str, Any] = {
        "people": people,
        "sockets": 2 * people,
        "concerned": concerned,
        "events": events,
        "event": "a round routed to a group of the concerned people (round_parked)",
        "layer": "redis" if "REDIS_URL" in run.env else "in-memory",
    }
    # Warm the page and the start form up, then the idle figures.
    await _page_ms(person, "/inbox/", 10)
    figures["memory_idle"] = _web_memory(run)
    idle = await _page_ms(person, "/inbox/", page_repeats)
    listener = Listener()
    cpu_before = cpu_seconds(run.web_pid)
    sockets, readers, opening = await open_all(run, watchers, listener)
    figures["open_seconds"] = opening
    figures["open_web_cpu_ms_per_socket"] = (
        (cpu_seconds(run.web_pid) - cpu_before) * 1000 / max(len(sockets), 1)
    )
    try:
        await asyncio.sleep(1.0)  # let the last sockets settle (their stale-state checks)
        figures["memory_open"] = _web_memory(run)
        loaded = await _page_ms(person, "/inbox/", page_repeats)
        latencies: list[float] = []
        reached: list[int] = []
        strays = 0
        for _ in range(events):
            for seen in listener.arrivals.values():
                seen.clear()
            cpu_before = cpu_seconds(run.web_pid)
            await _route_to_group(person)
            deadline = time.monotonic() + 30.0
            concerned_ids = {w.user_id for w in watchers if w.concerned}
            while time.monotonic() < deadline:
                got = {
                    uid
                    for uid in concerned_ids
                    if any(k == "round_parked" for k, _, _ in listener.arrivals.get(uid, []))
                }
                if len(got) == len(concerned_ids):
                    break
                await asyncio.sleep(0.05)
            figures.setdefault("event_web_cpu_ms", []).append(
                (cpu_seconds(run.web_pid) - cpu_before) * 1000
            )
            reached.append(len(got))
            for uid in concerned_ids:
                for kind, arrived, at in listener.arrivals.get(uid, []):
                    if kind == "round_parked" and at is not None:
                        latencies.append((arrived - at) * 1000)
                        break
            strays += sum(
                1
                for w in watchers
                if not w.concerned
                for kind, _, _ in listener.arrivals.get(w.user_id, [])
                if kind == "round_parked"
            )
        figures["memory_open_after_events"] = _web_memory(run)
        figures["still_open"] = len(sockets) - listener.closed
    finally:
        await close_all(sockets, readers)
    figures["published_to_received"] = summary(latencies, "ms")
    figures["reached"] = reached
    figures["unconcerned_reached"] = strays
    figures["page_idle"] = summary(idle, "ms")
    figures["page_loaded"] = summary(loaded, "ms")
    figures["page_ratio"] = (
        statistics.median(loaded) / statistics.median(idle) if idle and loaded else None
    )
    figures["targets"] = {"rss_mb": 300, "p95_ms": 1000, "page_ratio": 1.5}
    return figures


def main(argv: list[str] | None = None) -> None:
    """P6 alone: ``python -m bench.watchers --backend sqlite --people 1000 --concerned 500``."""
    import argparse
    import json

    from .stack import PERSON, inprocess_worker_supported, stack

    parser = argparse.ArgumentParser(description="P6 alone, printed as JSON.")
    parser.add_argument("--backend", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--people", type=int, default=1000)
    parser.add_argument("--concerned", type=int, default=500)
    parser.add_argument("--events", type=int, default=3)
    parser.add_argument("--page-repeats", type=int, default=20)
    args = parser.parse_args(argv)
    raise_fd_limit()
    # As bench.suite chooses: SQLite with tasks in the web process and the in-memory layer;
    # PostgreSQL with a db_worker process and Redis.
    mode = "inprocess" if args.backend == "sqlite" and inprocess_worker_supported() else "process"
    with stack(args.backend, worker_mode=mode, worker_interval=0.05) as run:
        from . import seed as bench_seed

        bench_seed.setup_django()
        context = bench_seed.prepare(run.mcp_url)

        async def go() -> dict[str, Any]:
            person = Person(run.app_url, PERSON, PASSWORD)
            await person.login()
            try:
                # As the suite runs it: a failure prints its error as the figures.
                return await guarded(
                    "p6",
                    measure(
                        run,
                        person,
                        context,
                        people=args.people,
                        concerned=args.concerned,
                        events=args.events,
                        page_repeats=args.page_repeats,
                    ),
                )
            finally:
                await person.close()

        print(json.dumps(asyncio.run(go()), indent=2))


if __name__ == "__main__":
    main()
