"""The poller: one tick does what is due (:func:`tick`); :class:`Poller` ticks in a thread.

A tick runs the calls' part (``calls.engine.run_due``: expiry, reminders and escalation,
watchdogs, lost streams, the sends a process that died left undone), then the webhooks'
(``webhooks.due.send_due``: retries, and deliveries whose task was lost). Each claims its rows
itself, so a tick is safe beside any number of others, in this process or another; a poller
killed mid-tick leaves what it had not committed to the next.
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime

from django.conf import settings
from django.db import close_old_connections, connections
from django.utils import timezone

from mrtrweb.calls import engine
from mrtrweb.webhooks import due as webhooks_due

__all__ = ["Poller", "tick"]

logger = logging.getLogger(__name__)

THREAD_NAME = "mrtrweb-scheduler"


def tick(now: datetime | None = None) -> dict[str, int]:
    """Do everything due by ``now``; how many of each kind."""
    now = now or timezone.now()
    done = engine.run_due(now)
    done["webhooks"] = webhooks_due.send_due(now)
    return done


class Poller:
    """Ticks every ``interval`` seconds (``MRTRWEB_SCHEDULER_INTERVAL``) in a daemon thread
    until stopped. A tick that fails (the database away a moment) is logged; the next one
    tries again."""

    def __init__(self, interval: float | None = None) -> None:
        self.interval = float(settings.MRTRWEB_SCHEDULER_INTERVAL if interval is None else interval)
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> Poller:
        self._thread = threading.Thread(target=self._loop, name=THREAD_NAME, daemon=True)
        self._thread.start()
        logger.info("scheduler started (every %.1f s)", self.interval)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Finish the tick in hand, then stop."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _loop(self) -> None:
        try:
            while not self._stopping.is_set():
                close_old_connections()
                try:
                    done = tick()
                except Exception:
                    logger.exception("the scheduler's tick failed; trying again")
                else:
                    if any(done.values()):
                        logger.info("scheduler: %s", done)
                self._stopping.wait(self.interval)
        finally:
            connections.close_all()
