"""The demo MCP server, running for real, driven through the engine as mrtrweb drives it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import mcp_types
import pytest
from asgiref.sync import async_to_sync

from mrtrweb.calls import engine
from mrtrweb.calls.models import Call, Round
from mrtrweb.elicitation import UrlRequest, classify, parse_request
from mrtrweb.mcp import MCPClient
from mrtrweb.servers.catalog import refresh_catalog
from mrtrweb.servers.models import Connection
from tests.peers.fixtures import REPO_ROOT, Peer, running_peer

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("inline_tasks")]

TOOLS = {"echo", "approve_deployment", "purchase", "verify_identity"}
GOOD_APPROVAL = {
    "service": "api",
    "replicas": 4,
    "canary_percent": 12.5,
    "notify": ["ops", "dev"],
    "window": "tonight",
    "reason": "Fixes the login timeout",
    "approve": True,
}
SHIPPING = {
    "name": "Ada Lovelace",
    "address": "12 Analytical Street, London",
    "country": "United Kingdom",
    "email": "ada@example.com",
    "express": True,
}


@pytest.fixture
def demo(demo_server: Peer) -> Connection:
    return Connection.objects.create(name="demo", url=demo_server.url)


def start(conn: Connection, user: Any, tool: str, arguments: Any = None) -> Call:
    return engine.start_call(
        connection=conn, method=Call.Method.TOOL, target=tool, arguments=arguments or {}, user=user
    )


def pending(call: Call) -> Round:
    call.refresh_from_db()
    assert call.status == Call.Status.WAITING, call.error
    return call.rounds.get(status=Round.Status.PENDING)


def answer(call: Call, user: Any, key: str, action: str, content: Any = None) -> Call:
    response: dict[str, Any] = {"action": action}
    if content is not None:
        response["content"] = content
    engine.answer(pending(call), {key: response}, user)
    call.refresh_from_db()
    return call


def params(round: Round, key: str) -> dict[str, Any]:
    return round.input_requests[key]["params"]


def text_of(call: Call) -> str:
    assert call.status == Call.Status.COMPLETED, call.error
    return call.result["content"][0]["text"]


# -- the server as a whole ------------------------------------------------------------------


def test_catalog_lists_the_demo_tools(demo: Connection) -> None:
    report = refresh_catalog(demo)
    assert report.ok, report.error
    assert report.era == "modern"
    assert report.server["info"] == {"name": "mrtrweb-demo", "version": "1.0.0"}
    assert report.server["protocol_version"] == "2026-07-28"
    assert {t.name for t in demo.tools()} == TOOLS
    assert report.dropped_tools == []
    assert all(t.title and t.description for t in demo.tools())


def test_echo_completes_at_once(demo: Connection, user: Any) -> None:
    call = start(demo, user, "echo", {"text": "hello, demo"})
    assert text_of(call) == "hello, demo"
    assert not call.rounds.exists()


def test_every_question_is_in_the_flat_vocabulary_mrtrweb_renders(
    demo: Connection, user: Any
) -> None:
    calls = [start(demo, user, tool) for tool in ("approve_deployment", "purchase")]
    shipping = answer(calls[1], user, "shipping", "accept", SHIPPING)
    for call in [*calls, shipping]:
        for key, request in pending(call).input_requests.items():
            parsed = parse_request(request)
            spec = classify(parsed.schema)
            assert spec.fields, key


def test_request_state_is_sealed(demo: Connection, user: Any) -> None:
    call = answer(start(demo, user, "purchase"), user, "shipping", "accept", SHIPPING)
    round = pending(call)
    # The shipping answer rides in the state, encrypted by the server: opaque to the client.
    assert round.request_state.startswith("v1.")
    # JSON's quotes never occur in base64: a readable answer would bring its quote along.
    assert '"Ada' not in round.request_state and "London" not in round.request_state


# -- approve_deployment ---------------------------------------------------------------------


def test_approve_deployment_asks_one_form_with_several_field_kinds(
    demo: Connection, user: Any
) -> None:
    call = start(demo, user, "approve_deployment", {"version": "v9.9.9"})
    round = pending(call)
    assert list(round.input_requests) == ["approval"]
    asked = params(round, "approval")
    assert "v9.9.9" in asked["message"]
    props = asked["requestedSchema"]["properties"]
    assert props["service"]["enum"] == ["web", "api", "worker", "billing"]
    assert (props["replicas"]["type"], props["replicas"]["minimum"]) == ("integer", 1)
    assert props["replicas"]["maximum"] == 20
    assert props["canary_percent"]["type"] == "number"
    assert [o["const"] for o in props["notify"]["items"]["anyOf"]] == ["ops", "dev", "support"]
    assert [o["const"] for o in props["window"]["oneOf"]] == ["now", "tonight", "weekend"]
    assert all(o["title"] for o in props["window"]["oneOf"])
    assert props["reason"]["type"] == "string"
    assert props["approve"]["type"] == "boolean"

    call = answer(call, user, "approval", "accept", GOOD_APPROVAL)
    text = text_of(call)
    assert text.startswith("Approved: api v9.9.9 goes out Tonight")
    assert "4 replicas" in text and "12.5% canary" in text
    assert "Operations on-call, #dev channel" in text
    assert call.result["structuredContent"] == {
        "status": "approved",
        "version": "v9.9.9",
        **{k: v for k, v in GOOD_APPROVAL.items() if k != "approve"},
    }
    assert not call.result.get("isError")


def test_approve_deployment_not_approved(demo: Connection, user: Any) -> None:
    call = start(demo, user, "approve_deployment")
    call = answer(call, user, "approval", "accept", {**GOOD_APPROVAL, "approve": False})
    assert "was not approved" in text_of(call)
    assert call.result["structuredContent"]["status"] == "rejected"


def test_approve_deployment_asks_again_when_an_answer_is_out_of_range(
    demo: Connection, user: Any
) -> None:
    call = start(demo, user, "approve_deployment")
    call = answer(call, user, "approval", "accept", {**GOOD_APPROVAL, "replicas": 50})
    again = pending(call)
    assert again.index == 2
    assert "replicas must be a whole number from 1 to 20" in params(again, "approval")["message"]
    call = answer(call, user, "approval", "accept", GOOD_APPROVAL)
    assert call.result["structuredContent"]["status"] == "approved"


@pytest.mark.parametrize(("action", "word"), [("decline", "declined"), ("cancel", "cancelled")])
def test_approve_deployment_declined_or_cancelled(
    demo: Connection, user: Any, action: str, word: str
) -> None:
    call = answer(start(demo, user, "approve_deployment"), user, "approval", action)
    assert text_of(call) == f"Deployment of v2.4.0 {word}; nothing was done."
    assert call.result["structuredContent"]["status"] == word
    assert not call.result.get("isError")


# -- purchase -------------------------------------------------------------------------------


def test_purchase_asks_twice_and_uses_both_answers(demo: Connection, user: Any) -> None:
    call = start(demo, user, "purchase", {"item": "USB-C cable", "quantity": 2})
    first = pending(call)
    assert list(first.input_requests) == ["shipping"]
    assert params(first, "shipping")["message"] == "Where should we ship 2 x USB-C cable?"
    assert params(first, "shipping")["requestedSchema"]["properties"]["email"]["format"] == "email"

    call = answer(call, user, "shipping", "accept", SHIPPING)
    second = pending(call)
    assert list(second.input_requests) == ["payment"]
    # 2 x 12.50 + 15.00 express, quoted back with the shipping answer.
    assert params(second, "payment")["message"] == (
        "Pay 40.00 EUR for 2 x USB-C cable, express delivery to Ada Lovelace, "
        "12 Analytical Street, London, United Kingdom?"
    )

    call = answer(
        call, user, "payment", "accept", {"card": "mc-5555", "coupon": "demo10", "confirm": True}
    )
    text = text_of(call)
    assert "36.00 EUR paid with Mastercard ending 5555" in text
    assert "express delivery to Ada Lovelace, 12 Analytical Street, London" in text
    assert "Coupon DEMO10 applied." in text
    structured = call.result["structuredContent"]
    assert structured["status"] == "ordered"
    assert structured["order"].startswith("DEMO-") and structured["order"] in text
    assert structured["shipping"] == SHIPPING
    assert structured["payment"] == {"card": "mc-5555", "coupon": "DEMO10"}
    assert structured["total"] == 36.0
    assert call.rounds.count() == 2


def test_purchase_asks_again_when_the_shipping_answer_is_wrong(demo: Connection, user: Any) -> None:
    call = answer(
        start(demo, user, "purchase"), user, "shipping", "accept", {**SHIPPING, "country": "Mars"}
    )
    again = pending(call)
    assert list(again.input_requests) == ["shipping"]
    assert "Please correct: we do not ship to Mars." in params(again, "shipping")["message"]
    call = answer(call, user, "shipping", "accept", SHIPPING)
    assert list(pending(call).input_requests) == ["payment"]


@pytest.mark.parametrize("action", ["decline", "cancel"])
def test_purchase_stopped_at_payment(demo: Connection, user: Any, action: str) -> None:
    call = answer(start(demo, user, "purchase"), user, "shipping", "accept", SHIPPING)
    call = answer(call, user, "payment", action)
    word = "declined" if action == "decline" else "cancelled"
    assert text_of(call) == f"Purchase of Mechanical keyboard {word} at payment; nothing was done."
    assert call.result["structuredContent"]["step"] == "payment"


def test_purchase_cancelled_at_shipping(demo: Connection, user: Any) -> None:
    call = answer(start(demo, user, "purchase"), user, "shipping", "cancel")
    assert call.result["structuredContent"] == {"status": "cancelled", "step": "shipping"}


def test_purchase_not_confirmed_charges_nothing(demo: Connection, user: Any) -> None:
    call = answer(start(demo, user, "purchase"), user, "shipping", "accept", SHIPPING)
    call = answer(call, user, "payment", "accept", {"card": "visa-4242", "confirm": False})
    assert "nothing was charged" in text_of(call)
    assert call.result["structuredContent"]["status"] == "unconfirmed"


# -- verify_identity ------------------------------------------------------------------------


def verify_link(round: Round) -> str:
    request = parse_request(round.input_requests["verify"])
    assert isinstance(request, UrlRequest)
    return request.url


def test_verify_identity_completes_only_after_the_page_was_confirmed(
    demo: Connection, demo_server: Peer, user: Any
) -> None:
    call = start(demo, user, "verify_identity", {"purpose": "see the payroll"})
    first = pending(call)
    assert params(first, "verify")["mode"] == "url"
    link = verify_link(first)
    parts = urlsplit(link)
    assert f"{parts.scheme}://{parts.netloc}" == demo_server.base_url
    assert parts.path == "/verify"
    ref = parse_qs(parts.query)["ref"][0]

    # "I've finished" without having pressed the button: the server asks again.
    call = answer(call, user, "verify", "accept")
    second = pending(call)
    assert second.index == 2
    assert verify_link(second) == link
    assert "has not seen your confirmation" in params(second, "verify")["message"]

    page = httpx.get(link)
    assert page.status_code == 200
    assert "see the payroll" in page.text
    assert "I&#x27;m verified" in page.text or "I'm verified" in page.text
    confirmed = httpx.post(f"{demo_server.base_url}/verify", data={"ref": ref})
    assert confirmed.status_code == 200
    assert "You are verified" in confirmed.text

    call = answer(call, user, "verify", "accept")
    assert text_of(call) == "Identity verified: you may now see the payroll."
    assert call.result["structuredContent"]["status"] == "verified"


def test_a_confirmation_is_used_once(demo: Connection, demo_server: Peer, user: Any) -> None:
    call = start(demo, user, "verify_identity")
    round = pending(call)
    ref = parse_qs(urlsplit(verify_link(round)).query)["ref"][0]
    httpx.post(f"{demo_server.base_url}/verify", data={"ref": ref}).raise_for_status()
    call = answer(call, user, "verify", "accept")
    assert call.result["structuredContent"]["status"] == "verified"

    # Replaying the same (still valid) state and answer does not verify again.
    async def replay() -> Any:
        async with MCPClient(demo.client_settings()) as client:
            return await client.call_tool(
                "verify_identity",
                call.arguments_json,
                input_responses={"verify": {"action": "accept"}},
                request_state=round.request_state,
            )

    again = async_to_sync(replay)()
    assert isinstance(again, mcp_types.InputRequiredResult)
    assert ref not in again.input_requests["verify"].params.url


@pytest.mark.parametrize(("action", "word"), [("decline", "declined"), ("cancel", "cancelled")])
def test_verify_identity_declined_or_cancelled(
    demo: Connection, user: Any, action: str, word: str
) -> None:
    call = answer(start(demo, user, "verify_identity"), user, "verify", action)
    assert text_of(call) == f"Identity verification {word}; nothing was done."


def test_verify_page_escapes_and_refuses_unknown_references(
    demo: Connection, demo_server: Peer, user: Any
) -> None:
    call = start(demo, user, "verify_identity", {"purpose": "<script>alert(1)</script>"})
    page = httpx.get(verify_link(pending(call)))
    assert "<script>alert(1)" not in page.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text
    assert page.headers["x-frame-options"] == "DENY"
    unknown = httpx.get(f"{demo_server.base_url}/verify?ref=nope")
    assert unknown.status_code == 404
    refused = httpx.post(f"{demo_server.base_url}/verify", data={"ref": "nope"})
    assert refused.status_code == 404


# -- the state key --------------------------------------------------------------------------


def test_a_shared_state_key_keeps_rounds_valid_across_a_restart(
    monkeypatch: pytest.MonkeyPatch, user: Any
) -> None:
    monkeypatch.setenv("MRTRWEB_DEMO_STATE_KEY", "k" * 40)
    with running_peer("mrtrweb.demo.server") as before:
        conn = Connection.objects.create(name="keyed", url=before.url)
        call = answer(start(conn, user, "purchase"), user, "shipping", "accept", SHIPPING)
        pending(call)
    with running_peer("mrtrweb.demo.server") as after:
        Connection.objects.filter(pk=conn.pk).update(url=after.url)
        call.refresh_from_db()
        call = answer(call, user, "payment", "accept", {"card": "visa-4242", "confirm": True})
        assert call.result["structuredContent"]["shipping"] == SHIPPING


def test_a_short_state_key_is_refused_at_start() -> None:
    env = {**os.environ, "MRTRWEB_DEMO_STATE_KEY": "too-short"}
    done = subprocess.run(
        [sys.executable, "-m", "mrtrweb.demo.server", "--port", "1"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "MRTRWEB_DEMO_STATE_KEY must be at least 32 characters" in done.stderr


def test_the_demo_is_a_standalone_program() -> None:
    # It is an example to copy: it must not need Django or the rest of mrtrweb.
    script = (
        "import json, sys; import mrtrweb.demo.server; "
        "print(json.dumps(sorted(m for m in sys.modules "
        "if m.split('.')[0] == 'django' or (m.startswith('mrtrweb.') "
        "and not m.startswith('mrtrweb.demo')))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []
