from django.apps import AppConfig


class AuthorizationsConfig(AppConfig):
    name = "mrtrweb.authorizations"
    label = "authorizations"
    verbose_name = "Server authorizations"
