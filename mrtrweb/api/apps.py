from django.apps import AppConfig


class ApiConfig(AppConfig):
    name = "mrtrweb.api"
    label = "api"
    verbose_name = "JSON API"
