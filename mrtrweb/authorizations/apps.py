from django.apps import AppConfig


class AuthorizationsConfig(AppConfig):
    name = "mrtrweb.authorizations"
    label = "authorizations"
    verbose_name = "Server authorizations"

    def ready(self) -> None:
        from . import access_log

        # The callback's code and state stay out of uvicorn's access log.
        access_log.install()
