from django.apps import AppConfig


class CallsConfig(AppConfig):
    name = "mrtrweb.calls"
    label = "calls"
    verbose_name = "Calls and rounds"

    def ready(self) -> None:
        from mrtrweb.authorizations.signals import connected

        from . import queue, receivers, tasks

        # The engine queues tasks by name; it never imports the module that runs them.
        queue.register(*tasks.QUEUED_BY_THE_ENGINE)
        # An account connected sends the calls that waited for it.
        connected.connect(receivers.account_connected, dispatch_uid="calls.account_connected")
