"""Fixtures for the live-update tests: people with real sessions, sockets on the real ASGI app.

- ``layer``: a fresh in-memory channel layer for the test (the app's default without Redis).
- ``people``: ``caller`` (starts calls), ``member`` (of the group ``Approvers``), ``outsider``.
- ``connect(user, path)``: a ``WebsocketCommunicator`` on ``mrtrweb.asgi.application`` carrying
  the user's session cookie (signed in through Django's session machinery, as a browser is),
  or no cookie for ``None``.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from channels.layers import channel_layers
from channels.testing.websocket import WebsocketCommunicator
from django.conf import settings as django_settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.test import Client

from mrtrweb.calls import engine
from mrtrweb.calls.models import Call
from mrtrweb.env import IN_MEMORY_CHANNEL_LAYER
from mrtrweb.live import events, worker
from mrtrweb.servers.models import Connection, Routing

# A page of the site itself (mrtrweb/live/origins.py): its origin is the Host it was served from.
HOST = (b"host", b"127.0.0.1")
ORIGIN = (b"origin", b"http://127.0.0.1")
LIVE_AT = re.compile(r'data-live-at="(\d+\.\d+(?:e[+-]?\d+)?)"')
LIVE_KIND = re.compile(r'data-live-kind="([a-z_]+)"')


@pytest.fixture(autouse=True)
def _isolated(settings: Any) -> Iterator[None]:
    # Tests drive the engine themselves; the app must not start a task worker of its own.
    settings.MRTRWEB_INPROCESS_WORKER = False
    yield
    events.remember_web_loop(None)
    worker.stop_inprocess_worker(timeout=5)


@pytest.fixture
def layer(settings: Any) -> Iterator[None]:
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": IN_MEMORY_CHANNEL_LAYER}}
    channel_layers.backends.clear()
    yield
    channel_layers.backends.clear()


@pytest.fixture
def people(db: None) -> dict[str, Any]:
    User = get_user_model()
    approvers, _ = Group.objects.get_or_create(name="Approvers")
    member = User.objects.create_user("mia", password="x")
    member.groups.add(approvers)
    return {
        "caller": User.objects.create_user("cal", password="x"),
        "member": member,
        "outsider": User.objects.create_user("otto", password="x"),
        "group": approvers,
    }


def session_cookie(user: Any) -> bytes:
    client = Client()
    client.force_login(user)
    name = django_settings.SESSION_COOKIE_NAME
    return f"{name}={client.cookies[name].value}".encode()


@pytest.fixture
async def connect() -> AsyncIterator[Callable[..., Any]]:
    from mrtrweb.asgi import application

    opened: list[WebsocketCommunicator] = []

    async def open_socket(user: Any, path: str) -> WebsocketCommunicator:
        headers = [HOST, ORIGIN]
        if user is not None:
            headers.append((b"cookie", await sync_to_async(session_cookie)(user)))
        communicator = WebsocketCommunicator(application, path, headers=headers)
        opened.append(communicator)
        connected, _ = await communicator.connect(timeout=5)
        assert connected
        return communicator

    yield open_socket
    for communicator in opened:
        # Already closed by the server, or the test's loop moved on.
        with contextlib.suppress(Exception):
            await communicator.disconnect(timeout=2)


async def frames_until(
    communicator: WebsocketCommunicator, kind: str, within: float = 10.0
) -> list[str]:
    """Every frame received until one whose kind is ``kind`` (included)."""
    received: list[str] = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while True:
        left = deadline - loop.time()
        if left <= 0:
            raise AssertionError(f"no {kind!r} frame within {within}s; got {received}")
        frame = await communicator.receive_from(timeout=left)
        received.append(frame)
        if kind in LIVE_KIND.findall(frame):
            return received


@database_sync_to_async
def start_deploy(peer: Any, caller: Any, *, group: Any = None) -> Call:
    """The peer's ``approve_deploy`` started by ``caller`` on a connection of its own (its
    rounds routed to ``group`` if given): the call, waiting on its round."""
    conn = Connection.objects.create(name=f"peer{time.monotonic_ns()}", url=peer.url)
    if group is not None:
        conn.routing, conn.route_group = Routing.GROUP, group
        conn.save()
    return engine.start_call(
        connection=conn,
        method=Call.Method.TOOL,
        target="approve_deploy",
        arguments={"service": "api"},
        user=caller,
    )


def kinds_of(frames: list[str]) -> list[str]:
    return [LIVE_KIND.findall(frame)[0] for frame in frames]
