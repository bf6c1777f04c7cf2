from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "mrtrweb.core"
    label = "core"
    verbose_name = "mrtrweb core"
