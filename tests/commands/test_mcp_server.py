"""``manage.py mcp_server add|list|test`` against real servers; secrets never leave the database."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.core.management import ManagementUtility, call_command
from django.core.management.base import CommandError
from django.db import connection as db_connection

from mrtrweb.servers.models import Connection
from tests.peers.fixtures import Peer

pytestmark = pytest.mark.django_db(transaction=True)

TOKEN = "tok-Sup3r-s3cret-7d1c"
HEADER_VALUE = "hdr-val-9f2e-classified"


def run(*args: str) -> str:
    out = StringIO()
    call_command("mcp_server", *args, stdout=out, stderr=out)
    return out.getvalue()


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """As from a shell: CommandError becomes a message on stderr and an exit status."""
    code = 0
    try:
        ManagementUtility(["manage.py", "mcp_server", *args]).execute()
    except SystemExit as exc:
        code = int(exc.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def raw_row(name: str) -> tuple[str, str]:
    with db_connection.cursor() as cursor:
        cursor.execute(
            "SELECT bearer_token, headers FROM servers_connection WHERE name = %s", [name]
        )
        return cursor.fetchone()


def test_add_stores_the_connection_with_secrets_encrypted() -> None:
    out = run(
        "add",
        "--name",
        "billing",
        "--url",
        "https://mcp.example.com/mcp",
        "--title",
        "Billing",
        "--bearer-token",
        TOKEN,
        "--header",
        f"X-Api-Key: {HEADER_VALUE}",
        "--header",
        "X-Team:ops",
        "--state-lifetime",
        "120",
        "--max-rounds",
        "4",
    )
    assert out == "Added connection 'billing' (https://mcp.example.com/mcp).\n"
    assert TOKEN not in out and HEADER_VALUE not in out
    conn = Connection.objects.get(name="billing")
    assert conn.title == "Billing"
    assert conn.bearer_token == TOKEN
    assert conn.headers == {"X-Api-Key": HEADER_VALUE, "X-Team": "ops"}
    assert conn.state_lifetime == timedelta(seconds=120)
    assert conn.max_rounds == 4
    stored_token, stored_headers = raw_row("billing")
    assert stored_token and TOKEN not in stored_token
    assert (
        stored_headers and HEADER_VALUE not in stored_headers and "X-Api-Key" not in stored_headers
    )


def test_defaults_when_options_are_left_out() -> None:
    run("add", "--name", "plain", "--url", "http://127.0.0.1:9/mcp")
    conn = Connection.objects.get(name="plain")
    assert (conn.bearer_token, conn.headers, conn.title) == ("", None, "")
    assert conn.state_lifetime == timedelta(minutes=10)
    assert conn.max_rounds == 10
    # A server that never answers 401 needs nothing; one that does asks each person.
    assert conn.auth == Connection.Auth.OAUTH_PERSON


def test_a_bearer_token_means_header_auth_unless_told_otherwise() -> None:
    run("add", "--name", "tok", "--url", "http://127.0.0.1:9/mcp", "--bearer-token", TOKEN)
    assert Connection.objects.get(name="tok").auth == Connection.Auth.HEADER


def test_oauth_client_settings_are_stored_and_never_printed(tmp_path) -> None:
    key = tmp_path / "key.pem"
    key.write_text("-----BEGIN PRIVATE KEY-----\nMIIkey-sekretless\n-----END PRIVATE KEY-----\n")
    out = run(
        "add",
        "--name",
        "machine",
        "--url",
        "http://127.0.0.1:9/mcp",
        "--auth",
        "client-credentials",
        "--oauth-client-id",
        "mrtrweb-ci",
        "--oauth-client-secret",
        "client-pass-1",
        "--oauth-private-key-file",
        str(key),
        "--oauth-scopes",
        "mcp:read mcp:write",
    )
    conn = Connection.objects.get(name="machine")
    assert conn.auth == Connection.Auth.CLIENT_CREDENTIALS
    assert (conn.oauth_client_id, conn.oauth_client_secret) == ("mrtrweb-ci", "client-pass-1")
    assert conn.oauth_private_key.startswith("-----BEGIN PRIVATE KEY-----")
    assert conn.oauth_scopes == "mcp:read mcp:write"
    listing = run("list")
    assert "client-pass-1" not in out + listing and "MIIkey" not in out + listing
    with db_connection.cursor() as cursor:
        cursor.execute(
            "SELECT oauth_client_secret, oauth_private_key FROM servers_connection"
            " WHERE name = 'machine'"
        )
        secret, private_key = cursor.fetchone()
    assert "client-pass-1" not in secret and "MIIkey" not in private_key


def test_a_key_file_without_a_private_key_is_refused(tmp_path) -> None:
    key = tmp_path / "cert.pem"
    key.write_text("-----BEGIN CERTIFICATE-----\n")
    with pytest.raises(CommandError, match="holds no PEM private key"):
        run(
            "add",
            "--name",
            "k",
            "--url",
            "http://127.0.0.1:9/mcp",
            "--oauth-private-key-file",
            str(key),
        )
    assert not Connection.objects.filter(name="k").exists()


def test_add_refuses_an_existing_name_unless_update() -> None:
    run("add", "--name", "demo", "--url", "http://127.0.0.1:1111/mcp", "--bearer-token", TOKEN)
    with pytest.raises(CommandError, match="exists; pass --update"):
        run("add", "--name", "demo", "--url", "http://127.0.0.1:2222/mcp")
    assert Connection.objects.get(name="demo").url == "http://127.0.0.1:1111/mcp"

    out = run("add", "--name", "demo", "--url", "http://127.0.0.1:2222/mcp", "--update")
    assert out.startswith("Updated connection 'demo'")
    conn = Connection.objects.get(name="demo")
    assert conn.url == "http://127.0.0.1:2222/mcp"
    # Options not given are kept.
    assert conn.bearer_token == TOKEN
    # --update is idempotent, and creates when missing.
    run("add", "--name", "demo", "--url", "http://127.0.0.1:2222/mcp", "--update")
    run("add", "--name", "fresh", "--url", "http://127.0.0.1:3333/mcp", "--update")
    assert Connection.objects.filter(name__in=["demo", "fresh"]).count() == 2

    run(
        "add",
        "--name",
        "demo",
        "--url",
        "http://127.0.0.1:2222/mcp",
        "--update",
        "--bearer-token",
        "",
    )
    assert Connection.objects.get(name="demo").bearer_token == ""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--name", "bad name", "--url", "http://x.test/mcp"], "--name"),
        (["--name", "ok", "--url", "not a url"], "--url"),
        (["--name", "ok", "--url", "http://x.test/mcp", "--header", "NoColon"], "Name: value"),
        (["--name", "ok", "--url", "http://x.test/mcp", "--header", "Bad Name: v"], "header name"),
        (["--name", "ok", "--url", "http://x.test/mcp", "--header", "Authorization: x"], "bearer"),
        (["--name", "ok", "--url", "http://x.test/mcp", "--header", "Mcp-Param-X: 1"], "mrtrweb"),
        (
            ["--name", "ok", "--url", "http://x.test/mcp", "--header", "A: 1", "--header", "a: 2"],
            "twice",
        ),
        (["--name", "ok", "--url", "http://x.test/mcp", "--max-rounds", "0"], "--max-rounds"),
        (["--name", "ok", "--url", "http://x.test/mcp", "--state-lifetime", "0"], "--state"),
    ],
)
def test_add_rejects_bad_input_and_creates_nothing(args: list[str], message: str) -> None:
    with pytest.raises(CommandError, match=message):
        run("add", *args)
    assert not Connection.objects.exists()


def test_a_header_value_with_a_line_break_is_refused_without_echoing_it() -> None:
    with pytest.raises(CommandError) as caught:
        run("add", "--name", "ok", "--url", "http://x.test/mcp", "--header", "X-Key: a\r\nb-SECRET")
    assert "SECRET" not in str(caught.value)


def test_list_shows_connections_but_never_their_secrets() -> None:
    assert "No connections yet" in run("list")
    run(
        "add",
        "--name",
        "alpha",
        "--url",
        "http://127.0.0.1:1/mcp",
        "--bearer-token",
        TOKEN,
        "--header",
        f"X-Api-Key: {HEADER_VALUE}",
    )
    run("add", "--name", "beta", "--url", "http://127.0.0.1:2/mcp")
    Connection.objects.filter(name="beta").update(enabled=False)
    lines = run("list").splitlines()
    assert lines[0].split() == [
        "NAME",
        "URL",
        "ENABLED",
        "ERA",
        "TOOLS",
        "AUTH",
        "TOKEN",
        "HEADERS",
    ]
    assert lines[1].split() == [
        "alpha",
        "http://127.0.0.1:1/mcp",
        "yes",
        "unknown",
        "-",
        "header",
        "set",
        "set",
    ]
    assert lines[2].split() == [
        "beta",
        "http://127.0.0.1:2/mcp",
        "no",
        "unknown",
        "-",
        "oauth-person",
        "-",
        "-",
    ]
    assert TOKEN not in "\n".join(lines) and HEADER_VALUE not in "\n".join(lines)


def test_test_probes_the_demo_server_and_caches_its_catalog(demo_server: Peer) -> None:
    run("add", "--name", "demo", "--url", demo_server.url)
    out = run("test", "demo")
    assert f"Connection 'demo' works: {demo_server.url}" in out
    assert "Server:         mrtrweb-demo 1.0.0" in out
    assert "Protocol:       2026-07-28 (era: modern)" in out
    assert "Capabilities: " in out and "tools" in out
    assert "Instructions:   A demonstration server for mrtrweb." in out
    assert "Tools (4):      echo, approve_deployment, purchase, verify_identity" in out
    lines = run("list").splitlines()
    assert lines[1].split()[2:5] == ["yes", "modern", "4"]


def test_test_with_a_bearer_token_never_prints_it(fault_peer: Any) -> None:
    peer = fault_peer("auth", "--token", TOKEN)
    run("add", "--name", "gated", "--url", peer.url, "--bearer-token", TOKEN)
    out = run("test", "gated")
    assert "era: modern" in out and TOKEN not in out

    run("add", "--name", "gated", "--url", peer.url, "--bearer-token", TOKEN + "-wrong", "--update")
    with pytest.raises(CommandError) as caught:
        run("test", "gated")
    assert "AuthenticationRequired" in str(caught.value)
    assert TOKEN not in str(caught.value)


def test_test_against_a_legacy_server_probes_it_with_the_handshake(
    fault_peer: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    peer = fault_peer("legacy")
    run("add", "--name", "old", "--url", peer.url)
    code, out, err = run_cli(capsys, "test", "old")
    assert code == 0, err
    assert "2025-11-25 (era: legacy)" in out
    assert Connection.objects.get(name="old").era == "legacy"


def test_test_an_unreachable_server_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    run("add", "--name", "gone", "--url", "http://127.0.0.1:9/mcp")
    code, _, err = run_cli(capsys, "test", "gone")
    assert code == 1
    assert "Connection 'gone' failed: NotDelivered" in err


def test_test_an_unknown_name() -> None:
    with pytest.raises(CommandError, match="No connection named 'nope'"):
        run("test", "nope")


def test_a_subcommand_is_required(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys)
    assert code == 2
    assert "add,list,test" in err
