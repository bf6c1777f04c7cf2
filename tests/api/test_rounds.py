"""Listing and answering rounds through the API: the round page's rules, as JSON."""

from __future__ import annotations

from typing import Any

import pytest

from mrtrweb.calls.models import Round
from tests.api.support import (
    APPROVAL,
    Api,
    api_for,
    person,
    pointers,
    problem,
    start,
)
from tests.inbox.support import APPROVERS, expose, to_group

pytestmark = pytest.mark.django_db


def _round_of(call: dict[str, Any]) -> int:
    return call["rounds"][-1]["id"]


def test_pending_rounds_are_mine_and_my_groups_unclaimed_ones(
    peer_conn: Any, fastmcp_peer: Any, ann_api: Api
) -> None:
    mine = _round_of(start(ann_api).json())
    ada = person("ada", APPROVERS)
    ada_api = api_for(ada)
    expose(to_group(fastmcp_peer, APPROVERS, "grouped"), "approve_deploy")
    grouped = _round_of(start(ann_api, server="grouped").json())
    start(api_for(person("zed")), name="approve_deploy")  # routed to zed: nobody else's
    assert [r["id"] for r in ann_api.get("/rounds", status="pending").json()["rounds"]] == [mine]
    listed = ada_api.get("/rounds").json()["rounds"]
    assert [r["id"] for r in listed] == [grouped]
    assert listed[0]["assignedGroup"] == APPROVERS and listed[0]["url"].endswith(
        f"/rounds/{grouped}/"
    )
    # Once another member claims it, it leaves ada's list.
    from mrtrweb.calls import engine

    engine.claim(Round.objects.get(pk=grouped), person("bea", APPROVERS))
    assert ada_api.get("/rounds").json()["rounds"] == []
    bad = ada_api.get("/rounds", status="open")
    assert bad.status_code == 422 and problem(bad)["errors"][0]["parameter"] == "status"


@pytest.mark.django_db(transaction=True)
def test_an_answer_is_delivered_and_a_second_one_is_a_409(
    peer_conn: Any, ann_api: Api, fastmcp_peer: Any, inline_tasks: Any
) -> None:
    call = start(ann_api).json()
    round_id = _round_of(call)
    mark = fastmcp_peer.mark()
    response = ann_api.post(
        f"/rounds/{round_id}/responses",
        {"responses": {"approval": {"action": "accept", "content": APPROVAL}}},
    )
    assert response.status_code == 202, response.content
    assert response.json()["answeredBy"] == "ann"
    sent = [r["json"] for r in fastmcp_peer.recorded(since=mark) if r["json"]][-1]
    # Exactly what the page sends for the same answers (defaults are not invented).
    assert sent["params"]["inputResponses"] == {
        "approval": {
            "action": "accept",
            "content": {
                "approve": True,
                "replicas": 3,
                "window": "tonight",
                "notify": ["ops"],
            },
        }
    }
    done = ann_api.get(f"/calls/{call['id']}").json()
    assert done["status"] == "completed"
    assert done["result"]["structuredContent"]["status"] == "deployed"
    again = ann_api.post(
        f"/rounds/{round_id}/responses", {"responses": {"approval": {"action": "decline"}}}
    )
    assert again.status_code == 409
    assert problem(again)["type"].endswith("already-answered")


@pytest.mark.parametrize(
    ("content", "where", "words"),
    [
        (
            {**APPROVAL, "replicas": 11},
            "/responses/approval/content/replicas",
            "less than or equal",
        ),
        ({**APPROVAL, "replicas": "3"}, "/responses/approval/content/replicas", "number"),
        ({**APPROVAL, "replicas": 2.5}, "/responses/approval/content/replicas", "whole number"),
        ({**APPROVAL, "approve": "yes"}, "/responses/approval/content/approve", "true or false"),
        ({**APPROVAL, "window": "later"}, "/responses/approval/content/window", "choices"),
        ({**APPROVAL, "notify": ["ops", "ceo"]}, "/responses/approval/content/notify", "choices"),
        ({**APPROVAL, "contact": "not-an-email"}, "/responses/approval/content/contact", "email"),
        ({**APPROVAL, "reason": "  a  "}, "/responses/approval/content/reason", "at least 3"),
        ({"approve": True, "window": "now"}, "/responses/approval/content/replicas", "required"),
        ({**APPROVAL, "extra": 1}, "/responses/approval/content/extra", "no such field"),
    ],
)
def test_an_invalid_answer_is_a_422_pointing_at_the_field(
    peer_conn: Any, ann_api: Api, content: dict[str, Any], where: str, words: str
) -> None:
    round_id = _round_of(start(ann_api).json())
    response = ann_api.post(
        f"/rounds/{round_id}/responses",
        {"responses": {"approval": {"action": "accept", "content": content}}},
    )
    assert response.status_code == 422, response.content
    errors = problem(response)["errors"]
    assert [e["pointer"] for e in errors] == [where]
    assert words in errors[0]["detail"]
    assert Round.objects.get(pk=round_id).status == "pending"


@pytest.mark.parametrize(
    ("responses", "where"),
    [
        ({}, "/responses/approval"),
        ({"approval": {"action": "decline"}, "other": {"action": "decline"}}, "/responses/other"),
        ({"approval": {"action": "decline", "content": {}}}, "/responses/approval/content"),
        ({"approval": {"action": "accept"}}, "/responses/approval/content"),
        ({"approval": {"action": "maybe"}}, "/responses/approval/action"),
    ],
)
def test_keys_and_actions_are_checked(
    peer_conn: Any, ann_api: Api, responses: dict[str, Any], where: str
) -> None:
    round_id = _round_of(start(ann_api).json())
    response = ann_api.post(f"/rounds/{round_id}/responses", {"responses": responses})
    assert response.status_code == 422, response.content
    assert where in pointers(response)


@pytest.mark.django_db(transaction=True)
def test_decline_is_sent_without_content(peer_conn: Any, ann_api: Api, inline_tasks: Any) -> None:
    call = start(ann_api).json()
    response = ann_api.post(
        f"/rounds/{_round_of(call)}/responses", {"responses": {"approval": {"action": "decline"}}}
    )
    assert response.status_code == 202
    done = ann_api.get(f"/calls/{call['id']}").json()
    assert done["result"]["structuredContent"]["status"] == "declined"


@pytest.mark.django_db(transaction=True)
def test_a_url_mode_request_is_accepted_without_content(
    peer_conn: Any, ann_api: Api, inline_tasks: Any
) -> None:
    call = start(ann_api, name="url_login", arguments={}).json()
    request = call["rounds"][0]["inputRequests"]["login"]
    assert request["params"]["mode"] == "url" and request["params"]["url"].startswith("http")
    with_content = ann_api.post(
        f"/rounds/{_round_of(call)}/responses",
        {"responses": {"login": {"action": "accept", "content": {"x": 1}}}},
    )
    assert with_content.status_code == 422
    assert pointers(with_content) == ["/responses/login/content"]
    response = ann_api.post(
        f"/rounds/{_round_of(call)}/responses", {"responses": {"login": {"action": "accept"}}}
    )
    assert response.status_code == 202, response.content
    done = ann_api.get(f"/calls/{call['id']}").json()
    assert done["result"]["structuredContent"]["status"] == "connected"


def test_someone_elses_round_is_a_404_and_changes_nothing(
    peer_conn: Any, ann_api: Api, bob_api: Api
) -> None:
    round_id = _round_of(start(ann_api).json())
    for path in (
        f"/rounds/{round_id}/responses",
        "/rounds/999999/responses",
        "/rounds/x/responses",
    ):
        response = bob_api.post(path, {"responses": {"approval": {"action": "decline"}}})
        assert response.status_code == 404
        problem(response)
    assert Round.objects.get(pk=round_id).status == "pending"


def test_the_api_and_the_page_send_the_same_answers_for_every_field_kind(
    peer_conn: Any, fastmcp_peer: Any, ann: Any
) -> None:
    from django.test import Client

    from mrtrweb.elicitation import prefix_for_key
    from tests.elicitation.support import post
    from tests.inbox.support import expose

    expose(peer_conn, "all_field_kinds")
    api = api_for(ann)
    by_page = Round.objects.get(
        pk=_round_of(start(api, name="all_field_kinds", arguments={}).json())
    )
    by_api = Round.objects.get(
        pk=_round_of(start(api, name="all_field_kinds", arguments={}).json())
    )
    (key,) = by_page.input_requests
    typed = {
        "text": "  hi  ",
        "email": "a@b.example",
        "website": "https://x.example/",
        "birthday": "2026-01-02",
        "meeting": "2026-08-01T09:30:00.250+02:00",
        "count": 7,
        "ratio": 0.5,
        "agree": False,
        "size": "medium",
        "color": "#f00",
        "legacy": "b",
        "toppings": ["cheese", "olives"],
    }
    posted = {
        **typed,
        "count": "7",
        "ratio": "0.5",
        "agree": None,  # an unticked box is not posted
        "size": "1",
        "color": "0",
        "legacy": "1",
        "toppings": ["0", "2"],
    }
    browser = Client()
    browser.force_login(ann)
    data = post(prefix_for_key(key), posted)
    page = browser.post(
        f"/rounds/{by_page.pk}/", {**{k: data.getlist(k) for k in data}, "action": "accept"}
    )
    assert page.status_code == 303, page.content.decode()[:2000]
    response = api.post(
        f"/rounds/{by_api.pk}/responses",
        {"responses": {key: {"action": "accept", "content": typed}}},
    )
    assert response.status_code == 202, response.content
    by_page.refresh_from_db()
    by_api.refresh_from_db()
    assert by_api.answers == by_page.answers
    content = by_api.answers[key]["content"]
    assert content["text"] == "hi" and content["meeting"] == "2026-08-01T09:30:00+02:00"
