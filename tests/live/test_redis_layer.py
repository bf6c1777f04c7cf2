"""The Redis channel layer's connections are waited for past the pool's size, not refused.

Against the real Redis on this machine (.ci/run starts it; elsewhere the test is skipped):
a burst of ``group_send``\\ s larger than the pool, as a hundred calls started at once make,
loses messages with channels-redis' own pool and none with ours."""

from __future__ import annotations

import asyncio
import secrets

import pytest
import redis
from channels_redis.core import RedisChannelLayer
from redis.exceptions import MaxConnectionsError

from mrtrweb import env
from mrtrweb.live.redis_layer import WaitingRedisChannelLayer
from tests.support.services import REDIS_URL, unavailable

BURST = 60
POOL = 4


@pytest.fixture
def redis_up() -> None:
    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=5).ping()
    except redis.RedisError as error:
        unavailable("Redis", error)


def _layers(sender: type[RedisChannelLayer]) -> list[RedisChannelLayer]:
    """A sender of the kind given and a receiver, as two processes of one site would have
    (our layer's host settings, a prefix of their own), each pool ``POOL`` connections."""
    (host,) = env.channel_layers(REDIS_URL)["default"]["CONFIG"]["hosts"]
    hosts = [{**host, "max_connections": POOL}]
    prefix = f"mrtrweb-test-{secrets.token_hex(4)}"
    return [kind(hosts=hosts, prefix=prefix) for kind in (sender, WaitingRedisChannelLayer)]


async def _burst(sender: type[RedisChannelLayer]) -> list[object]:
    """``BURST`` group sends at once from a layer of kind ``sender``, each to a group of one
    channel of a receiver; what each send came to (None, or its exception), once every
    delivered message is read."""
    layers = _layers(sender)
    outgoing, receiver = layers
    try:
        channels = [await receiver.new_channel() for _ in range(BURST)]
        for n, channel in enumerate(channels):
            await receiver.group_add(f"burst{n}", channel)
        sent = await asyncio.gather(
            *(outgoing.group_send(f"burst{n}", {"type": "burst", "n": n}) for n in range(BURST)),
            return_exceptions=True,
        )
        for n, channel in enumerate(channels):
            if sent[n] is None:
                message = await asyncio.wait_for(receiver.receive(channel), 10)
                assert message == {"type": "burst", "n": n}
    finally:
        for layer in layers:
            await layer.flush()
            await layer.close_pools()
    return sent


async def test_a_burst_larger_than_the_pool_waits_for_connections(redis_up: None) -> None:
    assert await _burst(WaitingRedisChannelLayer) == [None] * BURST


async def test_channels_redis_own_pool_refuses_such_a_burst(redis_up: None) -> None:
    """Why the layer above exists: with the library's pool the same burst loses sends."""
    sent = await _burst(RedisChannelLayer)
    refused = [s for s in sent if isinstance(s, MaxConnectionsError)]
    assert refused, sent
    assert all(s is None or isinstance(s, MaxConnectionsError) for s in sent)


def test_the_site_s_redis_layer_is_the_waiting_one() -> None:
    layers = env.channel_layers("redis://127.0.0.1:6379/3")
    assert layers["default"]["BACKEND"] == "mrtrweb.live.redis_layer.WaitingRedisChannelLayer"
