from django.apps import AppConfig


class CallsConfig(AppConfig):
    name = "mrtrweb.calls"
    label = "calls"
    verbose_name = "Calls and rounds"

    def ready(self) -> None:
        from . import queue, tasks

        # The engine queues tasks by name; it never imports the module that runs them.
        queue.register(*tasks.QUEUED_BY_THE_ENGINE)
