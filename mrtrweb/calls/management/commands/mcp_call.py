"""``manage.py mcp_call``: start a call from a script and print where it stands, as JSON.

    manage.py mcp_call --server demo --tool purchase --arguments '{"quantity": 2}'

prints one JSON object::

    {"id": 7, "status": "waiting", "url": "/calls/7/",
     "round": {"id": 9, "url": "/rounds/9/", "keys": ["shipping"]},
     "result": null, "error": null}

``round`` is the round waiting for a person (null when none), ``result`` the server's final
result once the call completed. The exit status is 0 whenever a call was started, whatever
its outcome: read ``status``. Bad options exit non-zero and start nothing.

A handshake-era server asks its questions on the call's open stream, which this process
holds: after printing, the command then waits until the call ends (the question is answered
on its page, or its deadline passes); stopped meanwhile, the server is told "cancel".
"""

from __future__ import annotations

import contextlib
import json
import sys
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from mrtrweb.calls import engine, handoff
from mrtrweb.calls.models import Call, Round
from mrtrweb.servers.catalog import ensure_catalog
from mrtrweb.servers.models import Connection


class Command(BaseCommand):
    help = (
        "Call a tool, get a prompt or read a resource on a connection, and print one JSON "
        "object: the call's id, status and page, and the round waiting for an answer."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--server", required=True, metavar="NAME", help="connection name")
        target = parser.add_mutually_exclusive_group(required=True)
        target.add_argument("--tool", metavar="NAME", help="call this tool")
        target.add_argument("--prompt", metavar="NAME", help="get this prompt")
        target.add_argument("--resource", metavar="URI", help="read this resource")
        parser.add_argument(
            "--arguments",
            metavar="JSON",
            help="a JSON object, sent exactly as given (tools and prompts; default {})",
        )
        parser.add_argument(
            "--user",
            metavar="USERNAME",
            help="who starts the call (default: the first superuser)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        connection = Connection.objects.filter(name=options["server"]).first()
        if connection is None:
            raise CommandError(
                f"No connection named {options['server']!r} (see: manage.py mcp_server list)"
            )
        if not connection.enabled:
            raise CommandError(f"The connection {connection.name!r} is disabled")

        if options["tool"] is not None:
            method, target = Call.Method.TOOL, options["tool"]
        elif options["prompt"] is not None:
            method, target = Call.Method.PROMPT, options["prompt"]
        else:
            method, target = Call.Method.RESOURCE, options["resource"]
        arguments = self.arguments(options["arguments"], method)
        user = self.user(options["user"])

        if method == Call.Method.TOOL:
            # The engine mirrors x-mcp-header arguments from the listed tool, so list first.
            # A failure here is not fatal: the call itself will report the real error.
            ensure_catalog(connection)

        # stdout is the JSON alone, for scripts to parse: whatever else writes to it while the
        # call runs (the console email backend, in development, prints every notification
        # there) goes to stderr, with the logs. self.stdout holds the real stdout.
        with contextlib.redirect_stdout(sys.stderr):
            call = engine.start_call(
                connection=connection,
                method=method,
                target=target,
                arguments=arguments,
                user=user,
            )
            described = describe(call)
        self.stdout.write(json.dumps(described, ensure_ascii=False))
        self.stdout.flush()
        if call.rounds.filter(carrier=Round.Carrier.STREAM, status=Round.Status.PENDING).exists():
            self.hold_the_stream()

    def hold_the_stream(self) -> None:
        """A handshake-era server asked on the call's open stream, which this process holds:
        it stays until the call ends, so the question can be answered on its page. Stopped
        (Ctrl-C), it tells the server "cancel" and the round is marked lost."""
        sys.stderr.write(
            "The server asked on the call's open stream, which this command holds: it waits "
            "until the call ends (answer on the round's page; Ctrl-C gives up).\n"
        )
        try:
            while not engine.wait_idle(1.0):
                pass
        finally:
            handoff.shutdown()

    def arguments(self, raw: str | None, method: str) -> str:
        if raw is None:
            return "{}"
        if method == Call.Method.RESOURCE:
            raise CommandError("--arguments does not apply to --resource")
        try:
            parsed = json.loads(raw)
        except ValueError as exc:
            raise CommandError(f"--arguments is not valid JSON: {exc}") from None
        if not isinstance(parsed, dict):
            raise CommandError('--arguments must be a JSON object, like {"text": "hi"}')
        # The text itself goes to the engine: the server sees exactly these bytes every round.
        return raw

    def user(self, username: str | None) -> Any:
        users = get_user_model()
        if username is not None:
            found = users.objects.filter(**{users.USERNAME_FIELD: username}).first()
            if found is None:
                raise CommandError(f"No user named {username!r}")
            if not found.is_active:
                raise CommandError(f"The user {username!r} is inactive")
            return found
        first = users.objects.filter(is_superuser=True, is_active=True).order_by("pk").first()
        if first is None:
            raise CommandError(
                "No superuser to start the call as: pass --user USERNAME, or create one "
                "(manage.py ensure_admin, which make run does)."
            )
        return first


def describe(call: Call) -> dict[str, Any]:
    pending = call.rounds.filter(status=Round.Status.PENDING).order_by("-index").first()
    return {
        "id": call.pk,
        "status": call.status,
        "url": call.get_absolute_url(),
        "round": (
            {
                "id": pending.pk,
                "url": pending.get_absolute_url(),
                "keys": list(pending.input_requests),
            }
            if pending is not None
            else None
        ),
        "result": call.result,
        "error": call.error or None,
    }
