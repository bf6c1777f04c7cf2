from django.apps import AppConfig


class StartingConfig(AppConfig):
    name = "mrtrweb.starting"
    label = "starting"
    verbose_name = "Starting a call"
