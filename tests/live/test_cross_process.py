"""With Redis, an event raised in another process reaches a socket held by this one.

The other process is ``manage.py shell -c`` on the same database, making a real engine
transition (a claim); this process holds the sockets, as a web process does.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
import redis
from channels.db import database_sync_to_async
from channels.layers import channel_layers
from django.db import connection

from mrtrweb import env

from .conftest import frames_until, kinds_of, start_deploy

pytestmark = pytest.mark.django_db(transaction=True)

REDIS_URL = "redis://127.0.0.1:6379/0"
REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def redis_layer(settings: Any) -> Any:
    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=5).ping()
    except redis.RedisError as error:
        message = f"Redis is not reachable: {error}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    # A prefix of its own, so no other test (or run) hears this one's messages.
    prefix = f"mrtrweb-live-{uuid.uuid4().hex[:12]}"
    # The layer as the settings make it from REDIS_URL.
    settings.CHANNEL_LAYERS = env.channel_layers(REDIS_URL, prefix)
    channel_layers.backends.clear()
    yield prefix
    channel_layers.backends.clear()


def database_url() -> str:
    """This test database, as a URL another process can open."""
    params = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{params['NAME']}"
    user, password = params.get("USER") or "", params.get("PASSWORD") or ""
    auth = f"{user}:{password}@" if password else f"{user}@" if user else ""
    host, port = params.get("HOST") or "127.0.0.1", params.get("PORT") or 5432
    return f"postgres://{auth}{host}:{port}/{params['NAME']}"


def in_another_process(code: str, prefix: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")}
    env.update(
        DJANGO_SETTINGS_MODULE="mrtrweb.settings",
        DATABASE_URL=database_url(),
        REDIS_URL=REDIS_URL,
        MRTRWEB_CHANNEL_PREFIX=prefix,
    )
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


async def test_an_event_raised_in_another_process_reaches_this_one_s_sockets(
    connect: Any, people: dict[str, Any], fastmcp_peer: Any, redis_layer: str
) -> None:
    caller, member = people["caller"], people["member"]

    call = await start_deploy(fastmcp_peer, caller, group=people["group"])
    round = await database_sync_to_async(call.rounds.get)()
    watching = await connect(caller, f"/ws/calls/{call.pk}/?view=call")
    inbox = await connect(member, "/ws/inbox/")

    await database_sync_to_async(in_another_process)(
        "from django.contrib.auth import get_user_model\n"
        "from mrtrweb.calls import engine\n"
        "from mrtrweb.calls.models import Round\n"
        f"engine.claim(Round.objects.get(pk={round.pk}), "
        f"get_user_model().objects.get(pk={member.pk}))\n",
        redis_layer,
    )

    assert kinds_of(await frames_until(watching, "claimed")) == ["claimed"]
    assert kinds_of(await frames_until(inbox, "claimed")) == ["claimed"]


async def test_an_event_for_many_sent_once_to_every_inbox_reaches_only_whom_it_names(
    connect: Any, people: dict[str, Any], fastmcp_peer: Any, redis_layer: str
) -> None:
    caller, member, outsider = people["caller"], people["member"], people["outsider"]
    call = await start_deploy(fastmcp_peer, caller, group=people["group"])
    round = await database_sync_to_async(call.rounds.get)()
    member_inbox = await connect(member, "/ws/inbox/")
    caller_inbox = await connect(caller, "/ws/inbox/")
    outsider_inbox = await connect(outsider, "/ws/inbox/")

    # The other process sends inbox messages as it would for a large group: once, to everyone.
    await database_sync_to_async(in_another_process)(
        "from django.contrib.auth import get_user_model\n"
        "from mrtrweb.calls import engine\n"
        "from mrtrweb.calls.models import Round\n"
        "from mrtrweb.live import events\n"
        "events.BROADCAST_FROM = 1\n"
        f"engine.claim(Round.objects.get(pk={round.pk}), "
        f"get_user_model().objects.get(pk={member.pk}))\n",
        redis_layer,
    )

    assert kinds_of(await frames_until(member_inbox, "claimed")) == ["claimed"]
    assert kinds_of(await frames_until(caller_inbox, "claimed")) == ["claimed"]
    assert await outsider_inbox.receive_nothing(timeout=0.5)


async def test_a_sign_out_in_another_process_closes_this_one_s_sockets(
    connect: Any, people: dict[str, Any], fastmcp_peer: Any, redis_layer: str
) -> None:
    caller, member = people["caller"], people["member"]
    call = await start_deploy(fastmcp_peer, caller, group=people["group"])
    caller_socket = await connect(caller, f"/ws/calls/{call.pk}/?view=call")
    member_inbox = await connect(member, "/ws/inbox/")

    # An admin deactivates the member on another web process.
    await database_sync_to_async(in_another_process)(
        "from django.contrib.auth import get_user_model\n"
        f"user = get_user_model().objects.get(pk={member.pk})\n"
        "user.is_active = False\n"
        "user.save()\n",
        redis_layer,
    )
    assert await member_inbox.receive_output(timeout=10) == {
        "type": "websocket.close",
        "code": 4401,
    }
    assert await caller_socket.receive_nothing(timeout=0.3)

    # The caller's sessions end there too (signed out, flushed, cleared).
    await database_sync_to_async(in_another_process)(
        "from django.contrib.sessions.models import Session\n"
        "for session in Session.objects.all():\n"
        "    session.delete()\n",
        redis_layer,
    )
    assert await caller_socket.receive_output(timeout=10) == {
        "type": "websocket.close",
        "code": 4401,
    }


async def test_an_idle_socket_outlives_the_layer_s_blocking_pop(redis_layer: str) -> None:
    """Nothing arrives for longer than channels-redis blocks in one pop: the receive goes on
    waiting (redis-py's own 5 s read timeout would have crashed it)."""
    from channels_redis.core import RedisChannelLayer

    layer = channel_layers["default"]
    channel = await layer.new_channel()
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(layer.receive(channel), RedisChannelLayer.brpop_timeout + 1.5)
    await layer.send(channel, {"type": "still.there"})
    assert await asyncio.wait_for(layer.receive(channel), 5) == {"type": "still.there"}
