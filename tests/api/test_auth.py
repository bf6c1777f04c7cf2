"""Only a live bearer token opens the API; sessions do not, and CSRF is not in the way."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from mrtrweb.api.models import ApiToken
from tests.api.support import Api, person, problem

pytestmark = pytest.mark.django_db

ENDPOINTS = [
    ("get", "/calls/1"),
    ("post", "/calls"),
    ("post", "/calls/1/cancel"),
    ("get", "/rounds"),
    ("post", "/rounds/1/responses"),
    ("get", "/servers"),
    ("post", "/servers"),
    ("get", "/servers/peer"),
    ("post", "/servers/peer/test"),
]


def _send(api: Api, method: str, path: str) -> Any:
    return api.get(path) if method == "get" else api.post(path, {})


@pytest.mark.parametrize(("method", "path"), ENDPOINTS)
def test_without_a_token_every_endpoint_is_a_401_with_a_challenge(method: str, path: str) -> None:
    response = _send(Api(None), method, path)
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Bearer realm="mrtrweb"'
    assert problem(response)["title"] == "Authentication required"


@pytest.mark.parametrize(
    "header",
    ["Basic YWxhZGRpbjpvcGVuc2VzYW1l", "Bearer", "Bearer mrtr_00000000_nope", "Bearer nope"],
)
def test_a_bad_authorization_header_is_a_401(header: str) -> None:
    response = Client().get("/api/v1/rounds", headers={"Authorization": header})
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith('Bearer realm="mrtrweb", error=')
    problem(response)


def test_a_revoked_token_or_an_inactive_user_is_refused() -> None:
    ann = person("ann")
    token, plain = ApiToken.issue(ann, "ci")
    assert Api(plain).get("/rounds").status_code == 200
    token.revoke()
    assert Api(plain).get("/rounds").status_code == 401
    _, other = ApiToken.issue(ann, "ci2")
    ann.is_active = False
    ann.save()
    assert Api(other).get("/rounds").status_code == 401


def test_a_signed_in_session_alone_does_not_open_the_api() -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(person("ann"))
    assert client.get("/api/v1/rounds").status_code == 401
    assert client.post("/api/v1/calls", "{}", content_type="application/json").status_code == 401


def test_token_requests_need_no_csrf_token(peer_conn: Any) -> None:
    _, plain = ApiToken.issue(person("ann"), "ci")
    response = Api(plain).post(
        "/calls", {"server": "peer", "name": "echo", "arguments": {"text": "x"}}
    )
    assert response.status_code == 201


def test_last_used_is_written_at_most_once_a_minute() -> None:
    token, plain = ApiToken.issue(person("ann"), "ci")
    api = Api(plain)
    api.get("/rounds")
    first = ApiToken.objects.get(pk=token.pk).last_used_at
    assert first is not None
    api.get("/rounds")
    assert ApiToken.objects.get(pk=token.pk).last_used_at == first
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=first - timedelta(minutes=5))
    api.get("/rounds")
    assert ApiToken.objects.get(pk=token.pk).last_used_at > first - timedelta(seconds=1)
    assert ApiToken.objects.get(pk=token.pk).last_used_at <= timezone.now()


def test_unknown_addresses_and_methods_are_problems_too() -> None:
    _, plain = ApiToken.issue(person("ann"), "ci")
    api = Api(plain)
    missing = api.get("/nothing/here")
    assert missing.status_code == 404 and problem(missing)["status"] == 404
    assert api.post("/nothing", {}).status_code == 404
    wrong = api.client.delete("/api/v1/calls", headers={"Authorization": f"Bearer {plain}"})
    assert wrong.status_code == 405 and wrong["Allow"] == "POST"
    problem(wrong)
