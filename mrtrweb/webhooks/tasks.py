"""Background entry point: one delivery attempt, and the one way attempts are queued.

``sending`` makes an attempt and stores when the next one is due (``next_attempt_at``); the
scheduler queues it then (:mod:`.due`). The task name is stored in queued rows
(``mrtrweb.webhooks.tasks.send_delivery``): it stays as it is.
"""

from __future__ import annotations

from django.db import transaction
from django_tasks import task

from . import sending


@task()
def send_delivery(delivery_id: int) -> None:
    retry_in = sending.attempt(delivery_id)
    if retry_in is not None and not send_delivery.get_backend().supports_defer:
        # A backend that runs tasks at once (django-tasks' ImmediateBackend) has no worker, so
        # no scheduler: the next attempt is made now.
        transaction.on_commit(lambda: schedule(delivery_id))


def schedule(delivery_id: int) -> None:
    """Enqueue an attempt now (the scheduler queues the later ones when they are due)."""
    send_delivery.enqueue(delivery_id)
