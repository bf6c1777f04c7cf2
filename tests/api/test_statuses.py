"""Every status a model can hold is one the API and the webhooks can send, and the OpenAPI
document lists it: the values are read from the models' choices, so a status added there and
forgotten here fails these tests. An error inside the API is still a problem, never the
site's HTML 500 page."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from django.apps import apps
from django.db import models

from mrtrweb.api.models import ApiToken
from mrtrweb.api.openapi import document
from mrtrweb.calls.models import Call, Round
from mrtrweb.webhooks import events
from mrtrweb.webhooks.models import Delivery, Subscription
from tests.api.support import Api, problem
from tests.api.test_openapi import _check
from tests.inbox.support import ask

pytestmark = pytest.mark.django_db

# Where each model's status is sent: the API's response schema and the webhook payload part.
SENT = {
    ("calls.Call", "status"): ("CallOut", "call"),
    ("calls.Round", "status"): ("RoundOut", "round"),
}
# Statuses no API body nor webhook carries, and why.
KEPT_INSIDE = {
    ("calls.RoundPart", "status"): "a split round's parts are shown on pages, not in the API",
    ("webhooks.Delivery", "status"): "deliveries are the operators' to see, in the dashboard",
    ("authorizations.Authorization", "status"): "a connected account, shown on its page",
    ("django_tasks_database.DBTaskResult", "status"): "the task queue's own bookkeeping",
}


def status_fields() -> dict[tuple[str, str], list[str]]:
    """Every field of every model whose name says it is a status, with its values."""
    found = {}
    for model in apps.get_models():
        for field in model._meta.get_fields():
            if isinstance(field, models.Field) and field.choices and "status" in field.name:
                found[(model._meta.label, field.name)] = [value for value, _ in field.choices]
    return found


def test_every_status_field_is_either_sent_or_kept_inside() -> None:
    assert set(status_fields()) == set(SENT) | set(KEPT_INSIDE)


def test_the_document_lists_every_status() -> None:
    schemas = document()["components"]["schemas"]
    for field, values in status_fields().items():
        if field in SENT:
            schema, _ = SENT[field]
            assert schemas[schema]["properties"]["status"]["enum"] == values, field


@pytest.fixture
def subscribed(peer_conn: Any, ann: Any, ann_api: Api) -> Round:
    """A round of ann's call, routed to her, whose call a webhook follows."""
    round = ask(peer_conn, ann)
    round.assigned_user = ann
    round.save(update_fields=["assigned_user"])
    token = ApiToken.objects.get(user=ann)
    Subscription.objects.create(call=round.call, token=token, url="https://hooks.example.test/")
    return round


def payloads(round: Round) -> list[dict[str, Any]]:
    """What the webhooks would send of the call and the round, as their receiver reads it."""
    Delivery.objects.all().delete()
    subscriptions = events.subscriptions_of(round.call_id)
    events.round_pending(round, subscriptions)
    events.call_finished(round.call, subscriptions)
    return [json.loads(d.body) for d in Delivery.objects.order_by("pk")]


@pytest.mark.parametrize("status", Round.Status.values)
def test_a_round_in_every_status_is_served_and_sent(
    subscribed: Round, ann_api: Api, status: str
) -> None:
    Round.objects.filter(pk=subscribed.pk).update(status=status)
    round = Round.objects.get(pk=subscribed.pk)
    doc = document()
    call_path = f"/calls/{round.call_id}"
    for response in (ann_api.get(call_path), ann_api.get(call_path, wait="0.05")):
        _check(doc, "/calls/{id}", "get", response)
        assert response.status_code == 200
        assert response.json()["rounds"][0]["status"] == status
    listed = ann_api.get("/rounds", status=status)
    _check(doc, "/rounds", "get", listed)
    assert [r["id"] for r in listed.json()["rounds"]] == [round.pk]
    (pending,) = payloads(round)
    assert pending["round"]["status"] == status


@pytest.mark.parametrize("status", Call.Status.values)
def test_a_call_in_every_status_is_served_and_sent(
    subscribed: Round, ann_api: Api, status: str
) -> None:
    Call.objects.filter(pk=subscribed.call_id).update(status=status)
    round = Round.objects.select_related("call").get(pk=subscribed.pk)
    doc = document()
    call_path = f"/calls/{round.call_id}"
    for response in (ann_api.get(call_path), ann_api.get(call_path, wait="0.05")):
        _check(doc, "/calls/{id}", "get", response)
        assert response.json()["status"] == status
    sent = payloads(round)
    assert {payload["call"]["status"] for payload in sent} == {status}
    assert len(sent) == (2 if round.call.is_finished else 1)


def test_an_error_inside_the_api_is_a_problem_and_logged(
    subscribed: Round, ann_api: Api, monkeypatch: Any, caplog: Any
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a bug of ours")

    monkeypatch.setattr("mrtrweb.api.serialize.round_out", broken)
    with caplog.at_level(logging.ERROR, logger="django.request"):
        response = ann_api.get(f"/calls/{subscribed.call_id}")
    assert response.status_code == 500
    assert problem(response)["type"].endswith("#problem-internal")
    assert "a bug of ours" not in response.content.decode()
    (logged,) = [r for r in caplog.records if r.name == "django.request"]
    assert logged.exc_info is not None and "a bug of ours" in str(logged.exc_info[1])
