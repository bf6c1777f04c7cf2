from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from mrtrweb.accounts.second_factor import is_required, remove_devices


class Command(BaseCommand):
    help = (
        "Remove a person's two-step sign-in (authenticator app and backup codes), e.g. after "
        "a lost phone. Their sessions stop counting as verified; admins and operators are "
        "asked to set it up again at their next page."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("usernames", nargs="+", metavar="username")

    def handle(self, *args: Any, usernames: list[str], **options: Any) -> None:
        users = get_user_model()
        found = {u.get_username(): u for u in users.objects.filter(username__in=usernames)}
        unknown = [name for name in usernames if name not in found]
        if unknown:
            raise CommandError(f"No such user: {', '.join(unknown)}")
        for name in usernames:
            user = found[name]
            removed = remove_devices(user)
            then = "must set it up again" if is_required(user) else "signs in with a password"
            self.stdout.write(f"{name}: removed {removed} device(s); {then}.")
