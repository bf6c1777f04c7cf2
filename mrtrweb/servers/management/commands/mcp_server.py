"""``manage.py mcp_server add|list|test``: MCP server connections for operators and scripts.

Secrets (the bearer token, custom headers, OAuth client secrets and keys) go into the database
encrypted and are never printed back: ``list`` only says whether they are set.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from mrtrweb.servers.catalog import refresh_catalog
from mrtrweb.servers.headers import HeaderError, parse_headers
from mrtrweb.servers.models import Connection


def headers_from(raws: list[str]) -> dict[str, str]:
    try:
        return parse_headers(raws, token_hint="--bearer-token")
    except HeaderError as exc:
        raise CommandError(f"--header: {exc}") from None


class Command(BaseCommand):
    help = "Add, list and test MCP server connections."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", metavar="{add,list,test}")
        actions.required = True

        add = actions.add_parser(
            "add",
            help="add a connection (or change one, with --update)",
            description="Add a connection. With --update, an existing connection of that "
            "name is changed instead (only the options given), which makes it idempotent.",
        )
        add.add_argument("--name", required=True, help="short name (letters, digits, - and _)")
        add.add_argument("--url", required=True, help="the MCP endpoint, e.g. https://host/mcp")
        add.add_argument("--title", help="a friendlier name shown in the UI")
        add.add_argument(
            "--bearer-token",
            help="sent as 'Authorization: Bearer ...'; stored encrypted; '' removes it",
        )
        add.add_argument(
            "--auth",
            choices=[choice.value for choice in Connection.Auth],
            help="how calls authenticate (default: oauth-person, or header with --bearer-token)",
        )
        add.add_argument(
            "--oauth-client-id",
            help="a client registered with the authorization server beforehand ('' removes it)",
        )
        add.add_argument(
            "--oauth-client-secret", help="its secret, stored encrypted ('' removes it)"
        )
        add.add_argument(
            "--oauth-private-key-file",
            type=Path,
            metavar="PEM",
            help="a private key for private_key_jwt client authentication (client credentials)",
        )
        add.add_argument("--oauth-scopes", help="space-separated scopes to ask for")
        add.add_argument(
            "--header",
            action="append",
            default=None,
            metavar='"NAME: VALUE"',
            help="a custom header, stored encrypted (repeatable; replaces all headers on --update)",
        )
        add.add_argument(
            "--state-lifetime",
            type=int,
            metavar="SECONDS",
            help="how long the server keeps a round's requestState valid (default 600)",
        )
        add.add_argument(
            "--max-rounds", type=int, metavar="N", help="input rounds per call (default 10)"
        )
        add.add_argument(
            "--question-deadline",
            type=float,
            metavar="SECONDS",
            help="how long a person has to answer a handshake-era server's question, which "
            "waits on the call's open stream (default 600)",
        )
        add.add_argument(
            "--update",
            action="store_true",
            help="if the connection exists, update it instead of failing",
        )

        actions.add_parser("list", help="list the connections (secrets are never shown)")

        test = actions.add_parser(
            "test",
            help="probe a connection: server identity, protocol era, capabilities, tools",
        )
        test.add_argument("name")

    def handle(self, *args: Any, action: str, **options: Any) -> None:
        if action == "add":
            self.add_connection(options)
        elif action == "list":
            self.list_connections()
        else:
            self.test_connection(options["name"])

    # -- add ------------------------------------------------------------------------------

    def add_connection(self, options: dict[str, Any]) -> None:
        name: str = options["name"]
        headers = headers_from(options["header"]) if options["header"] is not None else None
        if options["state_lifetime"] is not None and options["state_lifetime"] < 1:
            raise CommandError("--state-lifetime must be at least 1 second")
        if options["max_rounds"] is not None and options["max_rounds"] < 1:
            raise CommandError("--max-rounds must be at least 1")
        if options["question_deadline"] is not None and options["question_deadline"] < 1:
            raise CommandError("--question-deadline must be at least 1 second")

        with transaction.atomic():
            connection = Connection.objects.select_for_update().filter(name=name).first()
            created = connection is None
            if connection is None:
                connection = Connection(name=name)
            elif not options["update"]:
                raise CommandError(
                    f"A connection named {name!r} exists; pass --update to change it."
                )
            connection.url = options["url"]
            if options["title"] is not None:
                connection.title = options["title"]
            if options["bearer_token"] is not None:
                connection.bearer_token = options["bearer_token"]
                if options["bearer_token"] and options["auth"] is None:
                    connection.auth = Connection.Auth.HEADER
            if options["auth"] is not None:
                connection.auth = options["auth"]
            for option in ("oauth_client_id", "oauth_client_secret", "oauth_scopes"):
                if options[option] is not None:
                    setattr(connection, option, options[option])
            if options["oauth_private_key_file"] is not None:
                connection.oauth_private_key = _read_key(options["oauth_private_key_file"])
            if headers is not None:
                connection.headers = headers or None
            if options["state_lifetime"] is not None:
                connection.state_lifetime = timedelta(seconds=options["state_lifetime"])
            if options["max_rounds"] is not None:
                connection.max_rounds = options["max_rounds"]
            if options["question_deadline"] is not None:
                connection.question_deadline = options["question_deadline"]
            try:
                connection.full_clean()
            except ValidationError as exc:
                raise CommandError(_describe(exc)) from None
            connection.save()
        verb = "Added" if created else "Updated"
        self.stdout.write(f"{verb} connection {name!r} ({connection.url}).")

    # -- list -----------------------------------------------------------------------------

    def list_connections(self) -> None:
        connections = list(Connection.objects.order_by("name"))
        if not connections:
            self.stdout.write(
                "No connections yet. Add one: manage.py mcp_server add --name NAME --url URL"
            )
            return
        rows = [("NAME", "URL", "ENABLED", "ERA", "TOOLS", "AUTH", "TOKEN", "HEADERS")]
        for c in connections:
            rows.append(
                (
                    c.name,
                    c.url,
                    "yes" if c.enabled else "no",
                    c.era or "unknown",
                    str(len(c.catalog.get("tools", []))) if c.catalog_fetched_at else "-",
                    c.auth,
                    "set" if c.bearer_token else "-",
                    "set" if c.headers else "-",
                )
            )
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        for row in rows:
            self.stdout.write(
                "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
            )

    # -- test -----------------------------------------------------------------------------

    def test_connection(self, name: str) -> None:
        connection = Connection.objects.filter(name=name).first()
        if connection is None:
            raise CommandError(f"No connection named {name!r} (see: manage.py mcp_server list)")
        report = refresh_catalog(connection)
        if not report.ok:
            raise CommandError(f"Connection {name!r} failed: {report.error}", returncode=1)
        server = report.server
        info = server.get("info") or {}
        capabilities = sorted((server.get("capabilities") or {}).keys())
        catalog = connection.catalog
        lines = [
            f"Connection {name!r} works: {connection.url}",
            _line("Server", f"{info.get('name', '?')} {info.get('version', '')}".rstrip()),
            _line("Protocol", f"{server.get('protocol_version', '?')} (era: {report.era})"),
            _line("Capabilities", ", ".join(capabilities) or "none"),
            _line("Instructions", server.get("instructions") or "-"),
            _names("Tools", [t["name"] for t in catalog.get("tools", [])]),
            _names("Prompts", [p["name"] for p in catalog.get("prompts", [])]),
            _names("Resources", [r["uri"] for r in catalog.get("resources", [])]),
        ]
        for tool, why in report.dropped_tools:
            lines.append(f"Ignored tool {tool}: {why}")
        self.stdout.write("\n".join(lines))


def _line(label: str, value: str) -> str:
    return f"{label + ':':<16}{value}"


def _names(label: str, names: list[str]) -> str:
    return _line(f"{label} ({len(names)})", ", ".join(names) or "-")


def _describe(exc: ValidationError) -> str:
    if hasattr(exc, "message_dict"):
        return "; ".join(
            " ".join(messages)
            if field == NON_FIELD_ERRORS
            else f"--{field.replace('_', '-')}: {' '.join(messages)}"
            for field, messages in exc.message_dict.items()
        )
    return " ".join(exc.messages)


def _read_key(path: Path) -> str:
    try:
        text = path.read_text()
    except OSError as exc:
        raise CommandError(
            f"--oauth-private-key-file: cannot read {path}: {exc.strerror}"
        ) from None
    if "PRIVATE KEY-----" not in text:
        raise CommandError(f"--oauth-private-key-file: {path} holds no PEM private key")
    return text
