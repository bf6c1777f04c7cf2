import secrets
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction


class Command(BaseCommand):
    help = (
        "Create a superuser with a random password if there is no superuser yet; "
        "do nothing otherwise. The password is printed once and stored only as a hash."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--username", default="admin", help="default: %(default)s")

    def handle(self, *args: Any, username: str, **options: Any) -> None:
        user_model = get_user_model()
        with transaction.atomic():
            if user_model.objects.filter(is_superuser=True).exists():
                if options["verbosity"] >= 2:
                    self.stdout.write("A superuser exists; nothing to do.")
                return
            if user_model.objects.filter(**{user_model.USERNAME_FIELD: username}).exists():
                # Promoting an existing account would hand its owner the keys silently.
                raise CommandError(
                    f"No superuser exists, but a user named {username!r} does; "
                    "make one with `manage.py createsuperuser` or pass --username."
                )
            password = secrets.token_urlsafe(18)
            user_model.objects.create_superuser(
                **{user_model.USERNAME_FIELD: username}, email="", password=password
            )
        self.stdout.write(
            self.style.SUCCESS(f"Created superuser {username!r} with password: {password}")
        )
        self.stdout.write(
            "It is shown only this once: sign in at /admin/ and change it there "
            "(/admin/password_change/)."
        )
