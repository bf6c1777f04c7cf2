"""No malformed body is a 500: each is a 4xx problem that says what is wrong."""

from __future__ import annotations

from typing import Any

import pytest

from mrtrweb.api.problems import MAX_BODY_BYTES
from mrtrweb.calls.models import Call
from tests.api.support import Api, pointers, problem

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("raw", "status"),
    [
        (" ", 400),
        ("{", 400),
        ("not json", 400),
        ('{"server": NaN}', 400),
        ("[" * 100_000 + "]" * 100_000, 400),
        ("[]", 422),
        ("null", 422),
        ('"text"', 422),
        ('{"server": 5, "name": "echo"}', 422),
        ('{"server": "peer", "name": "echo", "arguments": {"text": "a\\u0000b"}}', 422),
        ('{"server": "peer", "name": "echo", "arguments": {"\\u0000": 1}}', 422),
        ('{"server": "peer", "name": "echo", "arguments": {"text": "\\ud800"}}', 422),
    ],
)
def test_malformed_start_bodies(peer_conn: Any, ann_api: Api, raw: str, status: int) -> None:
    response = ann_api.post("/calls", raw=raw)
    assert response.status_code == status, response.content[:300]
    if status != 201:
        problem(response)


def test_nul_characters_are_pointed_at(peer_conn: Any, ann_api: Api) -> None:
    raw = '{"server": "peer", "name": "echo", "arguments": {"text": "a\\u0000b"}}'
    assert pointers(ann_api.post("/calls", raw=raw)) == ["/arguments/text"]


def test_a_huge_body_is_a_413(peer_conn: Any, ann_api: Api) -> None:
    raw = (
        '{"server": "peer", "name": "echo", "arguments": {"text": "' + "x" * MAX_BODY_BYTES + '"}}'
    )
    response = ann_api.post("/calls", raw=raw)
    assert response.status_code == 413
    problem(response)
    assert not Call.objects.exists()


def test_another_content_type_is_a_415(peer_conn: Any, ann_api: Api) -> None:
    response = ann_api.client.post(
        "/api/v1/calls",
        {"server": "peer"},
        headers={"Authorization": f"Bearer {ann_api.token}"},
    )
    assert response.status_code == 415
    problem(response)


def test_unknown_fields_are_refused_by_name(peer_conn: Any, ann_api: Api) -> None:
    response = ann_api.post("/calls", {"server": "peer", "name": "echo", "route_user": "x"})
    assert response.status_code == 422
    assert problem(response)["errors"] == [
        {"detail": "Unknown field.", "pointer": "/route_user", "parameter": None}
    ]
