from django.apps import AppConfig


class LiveConfig(AppConfig):
    name = "mrtrweb.live"
    label = "live"
    verbose_name = "live updates"

    def ready(self) -> None:
        from mrtrweb.calls.signals import call_event, call_progress

        from . import signouts
        from .events import on_call_event, on_call_progress

        call_event.connect(on_call_event, dispatch_uid="mrtrweb.live")
        call_progress.connect(on_call_progress, dispatch_uid="mrtrweb.live.progress")
        signouts.connect()
