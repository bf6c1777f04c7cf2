from django.apps import AppConfig


class StartingConfig(AppConfig):
    name = "mrtrweb.start_pages"
    label = "starting"
    verbose_name = "Starting a call"
