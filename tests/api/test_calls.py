"""Starting, reading and cancelling calls through the API, on the real fastmcp peer."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mrtrweb.calls.models import Call, Round
from tests.api.support import Api, api_for, person, pointers, problem, start

pytestmark = pytest.mark.django_db


def test_starting_a_tool_that_asks_returns_the_waiting_call_with_its_round(
    peer_conn: Any, ann_api: Api, fastmcp_peer: Any
) -> None:
    response = start(ann_api)
    assert response.status_code == 201, response.content
    call = response.json()
    assert response["Location"] == f"http://testserver/api/v1/calls/{call['id']}"
    assert call["status"] == "waiting" and call["finished"] is False
    assert call["server"] == "peer" and call["method"] == "tools/call"
    assert call["name"] == "approve_deploy" and call["arguments"] == {"service": "api"}
    assert call["url"] == f"http://testserver/calls/{call['id']}/"
    (round,) = call["rounds"]
    stored = Round.objects.get(pk=round["id"])
    assert round["status"] == "pending"
    assert round["url"] == f"http://testserver/rounds/{stored.pk}/"
    assert round["inputRequests"] == stored.input_requests
    assert round["inputRequests"]["approval"]["method"] == "elicitation/create"
    assert round["assignedUser"] == "ann"
    # The opaque state stays in the database.
    assert stored.request_state and stored.request_state not in response.content.decode()
    assert "requestState" not in response.content.decode()


def test_a_tool_that_does_not_ask_completes_with_its_result(peer_conn: Any, ann_api: Api) -> None:
    response = start(ann_api, name="echo", arguments={"text": "hé"})
    assert response.status_code == 201, response.content
    call = response.json()
    assert call["status"] == "completed" and call["finished"] and call["rounds"] == []
    assert call["result"]["content"][0]["text"] == "hé"


def test_prompts_and_resources_are_for_operators(peer_conn: Any, ann_api: Api, op_api: Api) -> None:
    refused = ann_api.post("/calls", {"server": "peer", "method": "prompts/get", "name": "x"})
    assert refused.status_code == 422 and pointers(refused) == ["/method"]
    read = op_api.post(
        "/calls", {"server": "peer", "method": "resources/read", "uri": "resource://static-1"}
    )
    assert read.status_code == 201, read.content
    assert read.json()["uri"] == "resource://static-1" and read.json()["name"] is None


@pytest.mark.parametrize(
    ("body", "where"),
    [
        ({"server": "nope", "name": "echo"}, "/server"),
        ({"server": "peer", "name": "add", "arguments": {"a": 1, "b": 2}}, "/name"),  # unexposed
        ({"server": "peer", "name": "no_such_tool"}, "/name"),
        ({"server": "peer"}, "/name"),
        ({"server": "peer", "name": "echo", "uri": "x://y"}, "/uri"),
        ({"server": "peer", "name": "echo", "assignee": "ghost"}, "/assignee"),
        ({"server": "peer", "name": "echo", "group": "ghosts"}, "/group"),
        ({"server": "peer", "name": "echo", "assignee": "ann", "group": "x"}, "/group"),
        ({"server": "peer", "name": "echo", "webhook": "ftp://example.test/"}, "/webhook"),
        ({"server": "peer", "name": "echo", "webhook": "https:///path"}, "/webhook"),
        ({"server": "peer", "name": "echo", "arguments": []}, "/arguments"),
        ({"server": "peer", "name": "echo", "method": "tools/list"}, "/method"),
        ({"server": "peer", "name": "echo", "asignee": "ann"}, "/asignee"),
    ],
)
def test_a_bad_start_is_a_422_naming_the_field_and_starts_nothing(
    peer_conn: Any, ann_api: Api, body: dict[str, Any], where: str
) -> None:
    response = ann_api.post("/calls", body)
    assert response.status_code == 422, response.content
    assert where in pointers(response)
    assert not Call.objects.exists()


def test_assignee_routes_the_round(peer_conn: Any, ann_api: Api) -> None:
    person("bob")
    response = start(ann_api, assignee="bob")
    assert response.json()["rounds"][0]["assignedUser"] == "bob"


def test_another_users_call_is_a_404_like_a_missing_one(
    peer_conn: Any, ann_api: Api, bob_api: Api
) -> None:
    call = start(ann_api).json()
    assert ann_api.get(f"/calls/{call['id']}").status_code == 200
    for path in (f"/calls/{call['id']}", "/calls/999999", "/calls/-1", "/calls/abc"):
        response = bob_api.get(path)
        assert response.status_code == 404
        assert problem(response)["title"] == "Not found"
    assert bob_api.post(f"/calls/{call['id']}/cancel").status_code == 404
    assert Call.objects.get().status == "waiting"


def test_an_admin_sees_every_call(peer_conn: Any, ann_api: Api) -> None:
    from tests.api.support import admin

    call = start(ann_api).json()
    assert api_for(admin("alice")).get(f"/calls/{call['id']}").status_code == 200


def test_wait_times_out_with_the_call_unchanged(peer_conn: Any, ann_api: Api) -> None:
    import time

    call = start(ann_api).json()
    began = time.monotonic()
    response = ann_api.get(f"/calls/{call['id']}", wait="0.6")
    took = time.monotonic() - began
    assert response.status_code == 200 and response.json()["status"] == "waiting"
    assert 0.6 <= took < 3


def test_wait_on_a_finished_call_answers_at_once(peer_conn: Any, ann_api: Api) -> None:
    import time

    call = start(ann_api, name="echo", arguments={"text": "x"}).json()
    began = time.monotonic()
    assert ann_api.get(f"/calls/{call['id']}", wait="30").json()["status"] == "completed"
    assert time.monotonic() - began < 2


@pytest.mark.parametrize("wait", ["61", "-1", "soon", "nan"])
def test_a_bad_wait_is_a_422_naming_the_parameter(peer_conn: Any, ann_api: Api, wait: str) -> None:
    call = start(ann_api).json()
    response = ann_api.get(f"/calls/{call['id']}", wait=wait)
    assert response.status_code == 422
    assert problem(response)["errors"][0]["parameter"] == "wait"


@pytest.mark.django_db(transaction=True)
def test_cancel_tells_the_server_and_the_call_ends_cancelled(
    peer_conn: Any, ann_api: Api, fastmcp_peer: Any, inline_tasks: Any
) -> None:
    call = start(ann_api).json()
    mark = fastmcp_peer.mark()
    response = ann_api.post(f"/calls/{call['id']}/cancel")
    assert response.status_code == 200, response.content
    sent = [r["json"] for r in fastmcp_peer.recorded(since=mark) if r["json"]]
    assert sent[-1]["params"]["inputResponses"] == {"approval": {"action": "cancel"}}
    final = ann_api.get(f"/calls/{call['id']}").json()
    assert final["status"] == "completed" and final["rounds"][0]["status"] == "delivered"
    assert final["result"]["structuredContent"]["status"] == "cancelled"
    again = ann_api.post(f"/calls/{call['id']}/cancel")
    assert again.status_code == 409 and problem(again)["type"].endswith("finished")


def test_json_in_responses_is_what_the_models_say(peer_conn: Any, ann_api: Api) -> None:
    from mrtrweb.api.schemas import CallOut

    response = start(ann_api)
    CallOut.model_validate(json.loads(response.content))


@pytest.mark.django_db(transaction=True)
def test_wait_returns_when_someone_answers_meanwhile(
    peer_conn: Any, ann_api: Api, ann: Any
) -> None:
    import threading
    import time

    from django.db import connection as db

    from mrtrweb.calls import engine

    call = start(ann_api).json()
    round = Round.objects.get(pk=call["rounds"][0]["id"])

    def answer_later() -> None:
        try:
            time.sleep(0.7)
            engine.answer(round, {"approval": {"action": "decline"}}, ann)
        finally:
            db.close()

    answering = threading.Thread(target=answer_later)
    began = time.monotonic()
    answering.start()
    response = ann_api.get(f"/calls/{call['id']}", wait="20")
    took = time.monotonic() - began
    answering.join()
    assert response.status_code == 200
    assert response.json()["rounds"][0]["status"] != "pending"
    assert 0.7 <= took < 5


def test_a_webhook_is_subscribed_with_the_token(peer_conn: Any, ann: Any) -> None:
    from mrtrweb.api.models import ApiToken
    from mrtrweb.webhooks.models import Subscription

    token, plain = ApiToken.issue(ann, "hooked")
    response = start(Api(plain), webhook="https://hooks.example.test/mrtr")
    assert response.status_code == 201, response.content
    (subscription,) = Subscription.objects.all()
    assert subscription.call_id == response.json()["id"] and subscription.token == token
    assert subscription.url == "https://hooks.example.test/mrtr"


def test_a_webhook_to_an_internal_address_is_refused_before_the_call_starts(
    peer_conn: Any, ann_api: Api, settings: Any
) -> None:
    settings.MRTRWEB_WEBHOOK_ALLOW_PRIVATE = False
    response = start(ann_api, webhook="http://169.254.169.254/latest")
    assert response.status_code == 422 and pointers(response) == ["/webhook"]
    assert not Call.objects.exists()


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://0177.0.0.1/hook", "usual dotted form"),
        ("http://0x7f.1/hook", "usual dotted form"),
        ("http://2130706433/hook", "usual dotted form"),
        ("http://127.1/hook", "usual dotted form"),
        ("http://[fe80::1%25eth0]/hook", "zone id"),
        ("https://ci:secret@hooks.example.test/hook", "user name or password"),
        ("http://hooks.example.test./hook", "end with a dot"),
        ("http://[::1/hook", "cannot be used"),
        ("http://" + "a" * 64 + ".example.test/hook", "not a valid host name"),
        ("gopher://hooks.example.test/", "http:// or https://"),
        ("https:///hook", "no host"),
    ],
)
def test_a_webhook_the_sender_could_not_use_is_refused_with_its_reason(
    peer_conn: Any, ann_api: Api, settings: Any, url: str, why: str
) -> None:
    # Even where private addresses may receive webhooks: the spelling alone is refused.
    settings.MRTRWEB_WEBHOOK_ALLOW_PRIVATE = True
    response = start(ann_api, name="echo", arguments={"text": "x"}, webhook=url)
    assert response.status_code == 422, response.content
    (error,) = problem(response)["errors"]
    assert error["pointer"] == "/webhook"
    assert why in error["detail"] and error["detail"].startswith("The webhook cannot be used")
    assert not Call.objects.exists()


@pytest.mark.parametrize(
    "url",
    ["http://[::ffff:127.0.0.1]/hook", "http://[2002:a9fe:a9fe::]/latest", "http://10.1.2.3/"],
)
def test_an_internal_address_in_any_spelling_is_refused(
    peer_conn: Any, ann_api: Api, settings: Any, url: str
) -> None:
    settings.MRTRWEB_WEBHOOK_ALLOW_PRIVATE = False
    response = start(ann_api, name="echo", arguments={"text": "x"}, webhook=url)
    assert response.status_code == 422 and pointers(response) == ["/webhook"]
    assert "refused" in problem(response)["errors"][0]["detail"]
    assert not Call.objects.exists()
