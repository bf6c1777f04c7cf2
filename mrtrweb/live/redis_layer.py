"""The Redis channel layer (several processes), whose connections are waited for, not refused.

channels-redis gives each event loop a pool of Redis connections from redis-py's
``ConnectionPool``, which refuses a connection past ``max_connections`` (100) at once with
``MaxConnectionsError``. Every ``group_send`` holds one for a few round trips, so a burst of
events in one process (a hundred calls started at once, each telling its watchers and inboxes
from a delivery thread) asks for more than a hundred together, and some would be lost (P7 on
PostgreSQL with Redis). Here the pool is redis-py's ``BlockingConnectionPool``: past its
size a send waits for a connection to come back, up to :attr:`POOL_TIMEOUT` seconds, then
fails as before (the publisher logs it; a page that missed an event shows the truth on
reload).
"""

from __future__ import annotations

from typing import Any

from channels_redis.core import RedisChannelLayer
from redis.asyncio import BlockingConnectionPool


class WaitingRedisChannelLayer(RedisChannelLayer):
    """``channels_redis.core.RedisChannelLayer`` whose pools wait for a free connection."""

    # redis-py's own ConnectionPool size, kept; a host's ``max_connections`` wins.
    POOL_SIZE = 100
    # Within the publisher's wait for a send (mrtrweb.live.events: 10 s).
    POOL_TIMEOUT = 5.0

    def create_pool(self, index: int) -> Any:
        host = dict(self.hosts[index])
        if "address" not in host:
            # Sentinels, or a host given by its parts: channels-redis' own pool.
            return super().create_pool(index)
        address = host.pop("address")
        host.setdefault("max_connections", self.POOL_SIZE)
        host.setdefault("timeout", self.POOL_TIMEOUT)
        return BlockingConnectionPool.from_url(address, **host)
