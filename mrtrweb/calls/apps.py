from django.apps import AppConfig


class CallsConfig(AppConfig):
    name = "mrtrweb.calls"
    label = "calls"
    verbose_name = "Calls and rounds"
