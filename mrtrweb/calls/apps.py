from django.apps import AppConfig
from django.db.models.signals import post_migrate


class CallsConfig(AppConfig):
    name = "mrtrweb.calls"
    label = "calls"
    verbose_name = "Calls and rounds"

    def ready(self) -> None:
        from . import queue, tasks
        from .roles import ensure_roles

        # After migrate, when the permissions of every app exist.
        post_migrate.connect(ensure_roles, dispatch_uid="mrtrweb.calls.roles")
        # The engine queues tasks by name; it never imports the module that runs them.
        queue.register(*tasks.QUEUED_BY_THE_ENGINE)
