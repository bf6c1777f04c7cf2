import secrets
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction
from django.urls import reverse

from mrtrweb.people import usernames


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
            username = usernames.normalised(username)
            taken = usernames.holder(username)
            if taken is not None:
                # Promoting an existing account would hand its owner the keys silently.
                raise CommandError(
                    f"No superuser exists, but a user named {taken.get_username()!r} does; "
                    "make one with `manage.py createsuperuser` or pass --username."
                )
            password = secrets.token_urlsafe(18)
            user_model.objects.create_superuser(
                **{user_model.USERNAME_FIELD: username}, email="", password=password
            )
        self.stdout.write(self.style.SUCCESS(banner(username, password)))


def banner(username: str, password: str) -> str:
    """The one-time password in a box, with blank lines around it: ``make run`` prints more
    after it (the demo server, uvicorn's log), and the box is what an eye finds when scrolling
    back. It names the sign-in page the README names."""
    sign_in = settings.MRTRWEB_BASE_URL.rstrip("/") + reverse("login")
    change = settings.MRTRWEB_BASE_URL.rstrip("/") + reverse("password_change")
    lines = [
        "The first admin account of this site was created.",
        "",
        f"  username: {username}",
        f"  password: {password}",
        "",
        f"Sign in at {sign_in}",
        "The password is shown only this once (it is stored only as a hash):",
        f"change it after signing in, at {change}",
    ]
    width = max(len(line) for line in lines)
    rule = "+" + "-" * (width + 2) + "+"
    boxed = [rule, *(f"| {line.ljust(width)} |" for line in lines), rule]
    return "\n" + "\n".join(boxed) + "\n"
