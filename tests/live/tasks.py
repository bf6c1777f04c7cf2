"""A task for the in-process worker's tests: it only says which thread ran it."""

from __future__ import annotations

import threading

from django_tasks import task


@task()
def where_am_i(tag: str) -> str:
    return f"{tag} ran in {threading.current_thread().name}"
