"""``manage.py api_token USERNAME [--name NAME] [--revoke PREFIX] [--list]``.

Without options it issues a token and prints it once (the only time it exists in clear).
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandError, CommandParser

from mrtrweb.api.models import TOKEN_PREFIX, ApiToken


class Command(BaseCommand):
    help = "Issue, list or revoke a user's API tokens."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--name", default="command line", help="What the token is for.")
        parser.add_argument(
            "--revoke",
            metavar="PREFIX",
            help="Revoke the token starting with this prefix (mrtr_<prefix> or <prefix>).",
        )
        parser.add_argument("--list", action="store_true", help="List the user's tokens.")

    def handle(self, *args: Any, **options: Any) -> None:
        User = get_user_model()
        user = User.objects.filter(**{User.USERNAME_FIELD: options["username"]}).first()
        if user is None:
            raise CommandError(f"No user is called {options['username']!r}.")
        if options["list"]:
            self._list(user)
        elif options["revoke"]:
            self._revoke(user, options["revoke"])
        else:
            if not user.is_active:
                raise CommandError("The user is inactive: a token would not work.")
            token, plain = ApiToken.issue(user, options["name"])
            self.stderr.write(f"Token “{token.name}” for {user.get_username()} (shown only once):")
            self.stdout.write(plain)
            # On stderr, so `TOKEN=$(manage.py api_token ann)` captures the token alone.
            self.stderr.write(
                "Its webhook secret (webhooks are signed with it, to the Standard Webhooks "
                f"spec): {token.standard_webhook_secret}"
            )
            self.stderr.write(
                f"The same secret for X-Mrtr-Signature (until 0.3.0): {token.webhook_secret}"
            )

    def _list(self, user: User) -> None:
        tokens = ApiToken.objects.filter(user=user)
        if not tokens:
            self.stdout.write("no tokens")
        for token in tokens:
            state = f"revoked {token.revoked_at:%Y-%m-%d %H:%M}" if token.revoked_at else "active"
            used = f"{token.last_used_at:%Y-%m-%d %H:%M}" if token.last_used_at else "never"
            self.stdout.write(
                f"{TOKEN_PREFIX}{token.prefix}_…  {token.name}  "
                f"(made {token.created_at:%Y-%m-%d %H:%M}, last used {used}, {state})"
            )

    def _revoke(self, user: User, prefix: str) -> None:
        prefix = prefix.removeprefix(TOKEN_PREFIX).rstrip("_…").split("_")[0]
        tokens = list(ApiToken.objects.filter(user=user, prefix=prefix, revoked_at__isnull=True))
        if not tokens:
            raise CommandError(f"{user.get_username()} has no active token with prefix {prefix!r}.")
        for token in tokens:
            token.revoke()
            self.stdout.write(f"revoked {TOKEN_PREFIX}{token.prefix}_…  {token.name}")
