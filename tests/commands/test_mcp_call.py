"""``manage.py mcp_call``: one JSON object describing the call, against real servers."""

from __future__ import annotations

import json
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError

from mrtrweb.calls import engine
from mrtrweb.calls.models import Call, Round
from mrtrweb.servers.models import Connection
from tests.peers.fixtures import Peer
from tests.support.factories import make_user

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("inline_tasks")]

KEYS = {"id", "status", "url", "round", "result", "error"}


@pytest.fixture
def admin() -> Any:
    return get_user_model().objects.create_superuser("root", password="pw-root-123")


@pytest.fixture
def demo(demo_server: Peer) -> Connection:
    return Connection.objects.create(name="demo", url=demo_server.url)


@pytest.fixture
def peer(fastmcp_peer: Peer) -> Connection:
    return Connection.objects.create(name="peer", url=fastmcp_peer.url)


def mcp_call(*args: str) -> dict[str, Any]:
    out = StringIO()
    call_command("mcp_call", *args, stdout=out)
    text = out.getvalue()
    assert text.count("\n") == 1 and text.endswith("\n"), text
    printed = json.loads(text)
    assert set(printed) == KEYS
    return printed


def test_a_call_that_asks_prints_its_pending_round(demo: Connection, admin: Any) -> None:
    printed = mcp_call(
        "--server", "demo", "--tool", "purchase", "--arguments", '{"item": "Monitor arm"}'
    )
    call = Call.objects.get()
    round = call.rounds.get()
    assert printed == {
        "id": call.pk,
        "status": "waiting",
        "url": f"/calls/{call.pk}/",
        "round": {"id": round.pk, "url": f"/rounds/{round.pk}/", "keys": ["shipping"]},
        "result": None,
        "error": None,
    }
    assert call.started_by == admin
    assert call.arguments_json == '{"item": "Monitor arm"}'

    # The printed round is the one a person answers; the call then goes on.
    engine.answer(
        Round.objects.get(pk=printed["round"]["id"]),
        {
            "shipping": {
                "action": "accept",
                "content": {"name": "Ada", "address": "1 Main Street", "country": "France"},
            }
        },
        admin,
    )
    call.refresh_from_db()
    assert call.status == Call.Status.WAITING
    assert list(call.rounds.get(status=Round.Status.PENDING).input_requests) == ["payment"]


def test_a_call_that_completes_at_once_prints_the_result(demo: Connection, admin: Any) -> None:
    printed = mcp_call("--server", "demo", "--tool", "echo", "--arguments", '{"text": "héllo"}')
    assert printed["status"] == "completed"
    assert printed["round"] is None
    assert printed["error"] is None
    assert printed["result"]["content"] == [{"type": "text", "text": "héllo"}]
    assert printed["result"]["structuredContent"] == {"result": "héllo"}


def test_the_arguments_are_sent_exactly_as_given(
    peer: Connection, fastmcp_peer: Peer, admin: Any
) -> None:
    since = fastmcp_peer.mark()
    printed = mcp_call("--server", "peer", "--tool", "echo", "--arguments", '{ "text" :  "x" }')
    assert printed["result"]["content"][0]["text"] == "x"
    bodies = [r["body"] for r in fastmcp_peer.recorded(since) if "tools/call" in r["body"]]
    assert len(bodies) == 1
    assert '"arguments":{ "text" :  "x" }' in bodies[0]


def test_x_mcp_header_tools_work_because_the_catalog_is_listed_first(
    peer: Connection, admin: Any
) -> None:
    printed = mcp_call(
        "--server", "peer", "--tool", "route_request", "--arguments", '{"region": "eu-west"}'
    )
    assert printed["status"] == "completed", printed["error"]
    assert printed["result"]["structuredContent"]["mcp_param_headers"]["mcp-param-region"] == (
        "eu-west"
    )


def test_prompts_and_resources(peer: Connection, admin: Any) -> None:
    prompt = mcp_call(
        "--server", "peer", "--prompt", "review_prompt", "--arguments", '{"topic": "pie"}'
    )
    assert prompt["status"] == "waiting"
    assert prompt["round"]["keys"] == ["style"]
    plain = mcp_call("--server", "peer", "--prompt", "plain_prompt")
    assert plain["result"]["messages"][0]["content"]["text"] == "Just a plain prompt."
    resource = mcp_call("--server", "peer", "--resource", "peer://vault/secret")
    assert resource["round"]["keys"] == ["unlock"]
    static = mcp_call("--server", "peer", "--resource", "peer://static/2")
    assert static["result"]["contents"][0]["text"] == "static resource 2"
    assert Call.objects.filter(method=Call.Method.RESOURCE).count() == 2


def test_a_failed_call_prints_the_error(admin: Any) -> None:
    Connection.objects.create(name="gone", url="http://127.0.0.1:9/mcp")
    printed = mcp_call("--server", "gone", "--tool", "echo", "--arguments", '{"text": "x"}')
    assert printed["status"] == "failed"
    assert printed["error"].startswith("NotDelivered")
    assert printed["round"] is None and printed["result"] is None


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ('{"text": ', "--arguments is not valid JSON"),
        ("[1, 2]", "--arguments must be a JSON object"),
        ('"text"', "--arguments must be a JSON object"),
    ],
)
def test_bad_arguments_are_refused_and_nothing_is_created(
    peer: Connection, admin: Any, fastmcp_peer: Peer, arguments: str, message: str
) -> None:
    since = fastmcp_peer.mark()
    with pytest.raises(CommandError, match=message):
        mcp_call("--server", "peer", "--tool", "echo", "--arguments", arguments)
    assert not Call.objects.exists()
    assert fastmcp_peer.recorded(since) == []


def test_arguments_do_not_apply_to_resources(peer: Connection, admin: Any) -> None:
    with pytest.raises(CommandError, match="does not apply to --resource"):
        mcp_call("--server", "peer", "--resource", "peer://static/1", "--arguments", "{}")
    assert not Call.objects.exists()


def test_the_user_can_be_chosen(demo: Connection, admin: Any) -> None:
    ada = make_user("ada")
    printed = mcp_call(
        "--server", "demo", "--tool", "echo", "--arguments", '{"text": "a"}', "--user", "ada"
    )
    assert Call.objects.get(pk=printed["id"]).started_by == ada
    with pytest.raises(CommandError, match="No user named 'nobody'"):
        mcp_call("--server", "demo", "--tool", "echo", "--user", "nobody")


def test_without_a_superuser_the_error_says_what_to_do(demo: Connection) -> None:
    get_user_model().objects.create_user("plain", password="pw-plain-123")
    with pytest.raises(CommandError, match="No superuser to start the call as: pass --user"):
        mcp_call("--server", "demo", "--tool", "echo", "--arguments", '{"text": "a"}')
    assert not Call.objects.exists()


def test_unknown_or_disabled_connections(demo: Connection, admin: Any) -> None:
    with pytest.raises(CommandError, match="No connection named 'nope'"):
        mcp_call("--server", "nope", "--tool", "echo")
    Connection.objects.filter(pk=demo.pk).update(enabled=False)
    with pytest.raises(CommandError, match="disabled"):
        mcp_call("--server", "demo", "--tool", "echo")
    assert not Call.objects.exists()


def test_exactly_one_target_is_required(demo: Connection, admin: Any) -> None:
    with pytest.raises(CommandError, match="one of the arguments --tool --prompt --resource"):
        mcp_call("--server", "demo")
    with pytest.raises(CommandError, match="not allowed with argument"):
        mcp_call("--server", "demo", "--tool", "echo", "--prompt", "p")
