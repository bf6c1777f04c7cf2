from django.apps import AppConfig


class LiveConfig(AppConfig):
    name = "mrtrweb.live"
    label = "live"
    verbose_name = "live updates"

    def ready(self) -> None:
        from mrtrweb.calls.signals import call_event

        from . import signouts
        from .events import on_call_event

        call_event.connect(on_call_event, dispatch_uid="mrtrweb.live")
        signouts.connect()
