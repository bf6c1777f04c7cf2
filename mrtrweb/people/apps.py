from django.apps import AppConfig
from django.db.models.signals import post_migrate


class PeopleConfig(AppConfig):
    name = "mrtrweb.people"
    label = "people"
    verbose_name = "People and their roles"

    def ready(self) -> None:
        from .roles import ensure_roles

        # After migrate, when the permissions of every app exist.
        post_migrate.connect(ensure_roles, dispatch_uid="mrtrweb.people.roles")
