from django.apps import AppConfig


class LiveConfig(AppConfig):
    name = "mrtrweb.live"
    label = "live"
    verbose_name = "live updates"
