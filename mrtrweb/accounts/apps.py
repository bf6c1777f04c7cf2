from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "mrtrweb.accounts"
    label = "accounts"
    verbose_name = "Sign-in"

    def ready(self) -> None:
        from . import signals  # noqa: F401  (connects the sign-in receiver)
