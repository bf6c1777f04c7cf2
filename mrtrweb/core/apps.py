from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "mrtrweb.core"
    label = "core"
    verbose_name = "mrtrweb core"

    def ready(self) -> None:
        from mrtrweb.calls.signals import call_event
        from mrtrweb.core.event_log import log_call_event

        # One log line per engine event, in whichever process the event happened.
        call_event.connect(log_call_event, dispatch_uid="mrtrweb.core.event_log")
