from django.apps import AppConfig


class AuthorizationsConfig(AppConfig):
    name = "mrtrweb.authorizations"
    label = "authorizations"
    verbose_name = "Server authorizations"

    def ready(self) -> None:
        # The console (servers) lists catalogs with the right account without importing us.
        from mrtrweb.servers.catalog import provide_authenticators

        from .credentials import authenticator_for

        provide_authenticators(authenticator_for)

        from . import access_log

        # The callback's code and state stay out of uvicorn's access log.
        access_log.install()
