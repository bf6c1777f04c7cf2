"""The in-memory channel layer (one process, no Redis), with its expiry sweep bounded.

channels' ``InMemoryChannelLayer`` sweeps every queued message and every group membership for
expiry on each ``receive`` and each ``group_send``. Every open socket's consumer calls
``receive`` once per message it gets, so one event for 500 people on a process holding 2,000
sockets would walk all 2,000 queues and ~6,000 memberships a thousand times (seconds of CPU),
and opening the sockets would cost time growing with the number already open (P6).

Here the sweep runs at most once per :attr:`SWEEP_INTERVAL` seconds. What it enforces is
unchanged, only later by at most that long: a message left unread longer than ``expiry``
(60 s) is dropped, and so are the groups of the channel it was left on; a membership older
than ``group_expiry`` ends. Nothing about who gets what depends on it.
"""

from __future__ import annotations

import time
from typing import Any

from channels.layers import InMemoryChannelLayer


class SweptInMemoryChannelLayer(InMemoryChannelLayer):
    """``channels.layers.InMemoryChannelLayer`` whose expiry sweep runs at most once a second."""

    SWEEP_INTERVAL = 1.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._swept_at = float("-inf")

    def _clean_expired(self) -> None:
        now = time.monotonic()
        if now - self._swept_at < self.SWEEP_INTERVAL:
            return
        self._swept_at = now
        # types-channels leaves out the in-memory layer's sweep, which channels has.
        super()._clean_expired()  # type: ignore[misc]
