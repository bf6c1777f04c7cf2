from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "mrtrweb.webhooks"
    label = "webhooks"
    verbose_name = "webhooks"

    def ready(self) -> None:
        from mrtrweb.calls.signals import call_event

        from .receivers import on_call_event

        call_event.connect(on_call_event, dispatch_uid="mrtrweb.webhooks")
