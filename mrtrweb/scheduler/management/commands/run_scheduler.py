"""``manage.py run_scheduler``: the scheduler alone (a worker runs it already, beside its
tasks); ``--once`` runs one tick and prints what it did (cron, or by hand)."""

from __future__ import annotations

import signal
import threading
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from mrtrweb.scheduler.poller import Poller, tick


class Command(BaseCommand):
    help = "Do what is due (expiry, reminders, watchdogs, lost sends, webhooks)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--once", action="store_true", help="One tick, then exit.")
        parser.add_argument(
            "--interval",
            type=float,
            default=None,
            help="Seconds between ticks (default: MRTRWEB_SCHEDULER_INTERVAL).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["once"]:
            done = tick()
            self.stdout.write(", ".join(f"{kind} {count}" for kind, count in done.items()))
            return
        stop = threading.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.set())
        poller = Poller(options["interval"]).start()
        stop.wait()
        poller.stop()
