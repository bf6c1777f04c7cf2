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


@pytest.mark.parametrize("number", ["1e999", "-1e999", "1E400"])
def test_a_number_too_large_to_hold_is_refused_where_it_is(
    peer_conn: Any, ann_api: Api, number: str
) -> None:
    raw = f'{{"server": "peer", "name": "echo", "arguments": {{"n": [1, {number}]}}}}'
    response = ann_api.post("/calls", raw=raw)
    assert response.status_code == 422
    (error,) = problem(response)["errors"]
    assert error["pointer"] == "/arguments/n/1" and "finite" in error["detail"]
    assert not Call.objects.exists()


@pytest.mark.parametrize("literal", ["Infinity", "-Infinity", "NaN"])
def test_non_finite_literals_are_not_json(peer_conn: Any, ann_api: Api, literal: str) -> None:
    raw = f'{{"server": "peer", "name": "echo", "arguments": {{"n": {literal}}}}}'
    response = ann_api.post("/calls", raw=raw)
    assert response.status_code == 400 and literal in problem(response)["detail"]
    assert not Call.objects.exists()


def test_every_body_refuses_a_number_too_large_to_hold(op_api: Api) -> None:
    """Every operation the document says takes a body, as an operator (who may use them all)."""
    from mrtrweb.api.openapi import document

    taking = [
        (method, path.replace("{id}", "1").replace("{name}", "peer"))
        for path, operations in document()["paths"].items()
        for method, operation in operations.items()
        if "requestBody" in operation
    ]
    assert len(taking) >= 4
    for method, path in taking:
        send = op_api.client.generic
        response = send(
            method.upper(),
            "/api/v1" + path,
            '{"n": 1e999}',
            content_type="application/json",
            headers={"Authorization": f"Bearer {op_api.token}"},
        )
        assert response.status_code == 422, (method, path, response.content)
        (error,) = problem(response)["errors"]
        assert error["pointer"] == "/n" and "finite" in error["detail"], (method, path)
