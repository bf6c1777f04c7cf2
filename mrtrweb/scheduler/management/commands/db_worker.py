"""``manage.py db_worker``: django-tasks-db's worker, with the scheduler beside it.

This app comes before django-tasks-db in ``INSTALLED_APPS``, so this command is the one
``manage.py db_worker`` runs: every worker a deployment starts runs the scheduler
(:mod:`mrtrweb.scheduler`) in a thread, with nothing more to configure. ``--batch`` (run what
is queued, then exit) runs no scheduler.
"""

from __future__ import annotations

from typing import Any

from django_tasks_db.management.commands import db_worker

from mrtrweb.scheduler.poller import Poller


class Command(db_worker.Command):
    help = "Run a database background worker, and the scheduler beside it"

    def handle(self, *args: Any, **options: Any) -> None:
        poller = None if options.get("batch") else Poller().start()
        try:
            super().handle(*args, **options)
        finally:
            if poller is not None:
                poller.stop()
