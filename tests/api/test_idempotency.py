"""``Idempotency-Key`` on ``POST /api/v1/calls``, and a start that is stored whole or not at all
(the call, its webhook subscription and its key in one transaction), on the real fastmcp peer.

The concurrent cases run against the served app: tests/api/test_concurrent_starts.py (SQLite)
and tests/scaleout/test_api_starts.py (PostgreSQL)."""

from __future__ import annotations

import io
import json
import threading
import time
from datetime import timedelta
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from mrtrweb.api.models import ApiToken, IdempotencyKey
from mrtrweb.calls.models import Call, Event
from mrtrweb.webhooks.models import Subscription
from tests.api.support import Api, api_for, person, problem
from tests.support.sqlite_lock import lock_timeout, sqlite_only, write_lock_held

pytestmark = pytest.mark.django_db


ECHO = {"server": "peer", "name": "echo", "arguments": {"text": "once"}}


def _tool_calls(peer: Any, since: int) -> list[dict[str, Any]]:
    return [r for r in peer.recorded(since) if (r["json"] or {}).get("method") == "tools/call"]


def _post(api: Api, body: dict[str, Any], key: str | None = None, **raw: Any) -> Any:
    headers = {"Idempotency-Key": key} if key is not None else {}
    return api.post("/calls", body, headers=headers, **raw)


def test_a_retry_with_the_same_key_gets_the_same_call_and_starts_nothing(
    peer_conn: Any, ann_api: Api, fastmcp_peer: Any
) -> None:
    body = {**ECHO, "webhook": "https://hooks.example.test/ci"}
    mark = fastmcp_peer.mark()
    first = _post(ann_api, body, "8e03978e-40d5-43e8-bc93-6894a57f9324")
    assert first.status_code == 201, first.content
    assert "Idempotent-Replayed" not in first
    again = _post(ann_api, body, "8e03978e-40d5-43e8-bc93-6894a57f9324")
    assert again.status_code == 200, again.content
    assert again["Idempotent-Replayed"] == "true"
    assert again["Location"] == first["Location"]
    assert again.json() == first.json()  # the call had finished: nothing changed since
    assert len(_tool_calls(fastmcp_peer, mark)) == 1
    assert Call.objects.count() == 1 and Subscription.objects.count() == 1
    stored = IdempotencyKey.objects.get()
    assert stored.call_id == first.json()["id"] and len(stored.fingerprint) == 64


def test_the_replay_shows_the_call_as_it_is_now(peer_conn: Any, ann_api: Api) -> None:
    body = {"server": "peer", "name": "approve_deploy", "arguments": {"service": "api"}}
    first = _post(ann_api, body, "k-now")
    assert first.status_code == 201 and first.json()["status"] == "waiting"
    cancelled = ann_api.post(f"/calls/{first.json()['id']}/cancel")
    assert cancelled.status_code == 200, cancelled.content
    again = _post(ann_api, body, "k-now")
    assert again.status_code == 200
    assert again.json()["id"] == first.json()["id"]
    assert again.json()["rounds"][0]["status"] != "pending"


def test_the_same_request_is_recognised_whatever_its_spelling(peer_conn: Any, ann_api: Api) -> None:
    first = _post(ann_api, ECHO, "k-spelling")
    assert first.status_code == 201
    # Other key order, spacing, a default written out, and the key as a quoted string.
    raw = json.dumps(
        {"arguments": {"text": "once"}, "method": "tools/call", "name": "echo", "server": "peer"},
        indent=2,
    )
    again = _post(ann_api, {}, '"k-spelling"', raw=raw)
    assert again.status_code == 200, again.content
    assert again.json()["id"] == first.json()["id"]
    assert Call.objects.count() == 1


def test_the_same_key_with_another_body_is_refused(peer_conn: Any, ann_api: Api) -> None:
    first = _post(ann_api, ECHO, "k-reused")
    assert first.status_code == 201
    other = _post(ann_api, {**ECHO, "arguments": {"text": "twice"}}, "k-reused")
    assert other.status_code == 422
    found = problem(other)
    assert found["type"].endswith("#problem-idempotency-key-reused")
    assert "used for another request" in found["detail"]
    assert found["errors"][0]["parameter"] == "Idempotency-Key"
    assert Call.objects.count() == 1


def test_keys_belong_to_one_token(peer_conn: Any, ann: Any, ann_api: Api) -> None:
    """The same key from another token, even the same person's, is another request."""
    ids = {
        _post(api, ECHO, "shared").json()["id"]
        for api in (ann_api, api_for(ann), api_for(person("bob")))
    }
    assert len(ids) == 3 and Call.objects.count() == 3
    assert IdempotencyKey.objects.filter(key="shared").count() == 3


def test_a_refused_request_stores_no_key(peer_conn: Any, ann_api: Api) -> None:
    wrong = _post(ann_api, {**ECHO, "server": "nope"}, "k-fixed")
    assert wrong.status_code == 422
    assert not IdempotencyKey.objects.exists()
    fixed = _post(ann_api, ECHO, "k-fixed")
    assert fixed.status_code == 201, fixed.content


@pytest.mark.parametrize(
    "key", ["", "   ", "x" * 256, "tab\there", "naïve", '""', " \x7f "], ids=repr
)
def test_a_malformed_key_is_a_422_naming_the_header(peer_conn: Any, ann_api: Api, key: str) -> None:
    response = _post(ann_api, ECHO, key)
    assert response.status_code == 422, response.content
    found = problem(response)
    assert found["type"].endswith("#problem-invalid-parameter")
    assert found["errors"][0]["parameter"] == "Idempotency-Key"
    assert not Call.objects.exists()


def test_a_key_expires_after_a_day_and_is_pruned(peer_conn: Any, ann_api: Api) -> None:
    first = _post(ann_api, ECHO, "k-old")
    assert first.status_code == 201
    IdempotencyKey.objects.update(created_at=timezone.now() - timedelta(hours=24, seconds=1))
    # Past its lifetime the key is free again, even for another body.
    fresh = _post(ann_api, {**ECHO, "arguments": {"text": "new"}}, "k-old")
    assert fresh.status_code == 201, fresh.content
    assert fresh.json()["id"] != first.json()["id"]
    assert IdempotencyKey.objects.get().call_id == fresh.json()["id"]
    assert _post(ann_api, ECHO, "k-other").status_code == 201
    IdempotencyKey.objects.filter(key="k-other").update(
        created_at=timezone.now() - timedelta(days=2)
    )
    out = io.StringIO()
    call_command("prune_idempotency_keys", stdout=out)
    assert out.getvalue().strip() == "deleted 1"
    assert list(IdempotencyKey.objects.values_list("key", flat=True)) == ["k-old"]


def test_a_deleted_token_takes_its_keys(peer_conn: Any, ann_api: Api) -> None:
    assert _post(ann_api, ECHO, "k-gone").status_code == 201
    ApiToken.objects.all().delete()
    assert not IdempotencyKey.objects.exists() and Call.objects.count() == 1


# -- the database's write lock ---------------------------------------------------------------


@sqlite_only
@pytest.mark.django_db(transaction=True)
def test_a_start_waits_for_the_write_lock_instead_of_failing(peer_conn: Any, ann_api: Api) -> None:
    assert _post(ann_api, ECHO).status_code == 201  # the catalog is cached now
    began = time.monotonic()
    with write_lock_held(release_after=1.0):
        response = _post(ann_api, {**ECHO, "webhook": "https://hooks.example.test/w"}, "k-wait")
    assert response.status_code == 201, response.content
    assert time.monotonic() - began >= 0.9
    call = Call.objects.get(pk=response.json()["id"])
    assert Subscription.objects.filter(call=call).count() == 1
    assert IdempotencyKey.objects.get(key="k-wait").call == call


@sqlite_only
@pytest.mark.django_db(transaction=True)
def test_a_lock_held_past_the_timeout_is_a_503_and_stores_nothing(
    peer_conn: Any, ann_api: Api
) -> None:
    assert _post(ann_api, ECHO).status_code == 201
    body = {**ECHO, "webhook": "https://hooks.example.test/w"}
    with lock_timeout(200), write_lock_held():
        busy = _post(ann_api, body, "k-busy")
    assert busy.status_code == 503, busy.content
    assert busy["Retry-After"] == "2"
    assert problem(busy)["type"].endswith("#problem-busy")
    assert Call.objects.count() == 1  # only the first one
    assert not Subscription.objects.exists() and not IdempotencyKey.objects.exists()
    retried = _post(ann_api, body, "k-busy")
    assert retried.status_code == 201, retried.content
    assert Subscription.objects.get().call_id == retried.json()["id"]


@sqlite_only
@pytest.mark.django_db(transaction=True)
def test_two_requests_with_one_key_racing_for_the_lock_start_one_call(
    peer_conn: Any, ann_api: Api, fastmcp_peer: Any
) -> None:
    """Both look the key up while another process holds the write lock (neither finds it),
    then queue for the lock: the first commits its call with the key, the second's insert
    of the key breaks the unique constraint, rolls back whole and answers with that call."""
    assert _post(ann_api, ECHO).status_code == 201  # catalog cached, token's lastUsedAt set
    mark = fastmcp_peer.mark()
    body = {**ECHO, "webhook": "https://hooks.example.test/race"}
    responses: list[Any] = []

    def send() -> None:
        try:
            responses.append(_post(ann_api, body, "k-race"))
        finally:
            connection.close()

    with write_lock_held(release_after=1.0):
        threads = [threading.Thread(target=send) for _ in range(2)]
        for thread in threads:
            thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(r.status_code for r in responses) == [200, 201]
    assert len({r.json()["id"] for r in responses}) == 1
    assert len(_tool_calls(fastmcp_peer, mark)) == 1
    assert Call.objects.count() == 2  # the priming one and the raced one
    assert Subscription.objects.get().call_id == responses[0].json()["id"]


@pytest.mark.django_db(transaction=True)
def test_the_call_and_what_goes_with_it_are_one_transaction(
    peer_conn: Any, ann: Any, fastmcp_peer: Any
) -> None:
    """What ``with_call`` writes is committed with the call, or rolled back with it."""
    from mrtrweb.calls import engine

    token = ApiToken.issue(ann, "t")[0]

    def subscribe_then_fail(call: Call) -> None:
        Subscription.objects.create(call=call, token=token, url="https://hooks.example.test/")
        raise RuntimeError("the request's own rows could not be written")

    mark = fastmcp_peer.mark()
    with pytest.raises(RuntimeError):
        engine.start_call(
            connection=peer_conn,
            method=Call.Method.TOOL,
            target="echo",
            arguments={"text": "x"},
            user=ann,
            with_call=subscribe_then_fail,
        )
    assert not Call.objects.exists() and not Event.objects.exists()
    assert not Subscription.objects.exists()
    assert _tool_calls(fastmcp_peer, mark) == []  # nothing was sent either
