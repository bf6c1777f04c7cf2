"""Background entry point: one delivery attempt. Retries are enqueued by the attempt."""

from __future__ import annotations

from django_tasks import task

from . import sending


@task()
def send_delivery(delivery_id: int) -> None:
    sending.attempt(delivery_id)
