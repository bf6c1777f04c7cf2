"""The OpenAPI document describes every endpoint, and what the API sends matches it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from django.urls import get_resolver
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from mrtrweb.api.openapi import document
from tests.api.support import APPROVAL, Api, start

pytestmark = pytest.mark.django_db


def _doc() -> dict[str, Any]:
    response = Client().get("/api/v1/openapi.json")
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    return response.json()


def test_the_document_is_openapi_3_1_with_a_bearer_scheme() -> None:
    from openapi_pydantic import OpenAPI  # comes with schemathesis

    doc = _doc()
    OpenAPI.model_validate(doc)
    assert doc["openapi"] == "3.1.0"
    assert doc["components"]["securitySchemes"]["BearerToken"]["scheme"] == "bearer"
    for schema in doc["components"]["schemas"].values():
        Draft202012Validator.check_schema(schema)


def test_every_endpoint_is_documented() -> None:
    api = get_resolver().namespace_dict["api"][1]
    routes = {
        "/" + str(p.pattern).replace("<id>", "{id}").replace("<name>", "{name}")
        for p in api.url_patterns
        if p.name not in ("openapi", "reference", "reference_slash", "unknown")
    }
    assert routes == set(_doc()["paths"])


def _validator(doc: dict[str, Any], schema: dict[str, Any]) -> Draft202012Validator:
    root = Resource.from_contents(doc, default_specification=DRAFT202012)
    registry = Registry().with_resource("urn:api", root)
    return Draft202012Validator({**schema, "$id": "urn:api#x"}, registry=registry)


def _check(doc: dict[str, Any], path: str, method: str, response: Any) -> None:
    documented = doc["paths"][path][method]["responses"]
    assert str(response.status_code) in documented, (path, response.status_code)
    content = documented[str(response.status_code)]["content"]
    media = response["Content-Type"]
    assert media in content, (path, media)
    ref = content[media]["schema"]["$ref"].replace("#/", "urn:api#/")
    _validator(doc, {"$ref": ref}).validate(json.loads(response.content))


@pytest.mark.django_db(transaction=True)
def test_responses_match_their_documented_schemas(
    peer_conn: Any, ann_api: Api, op_api: Api, inline_tasks: Any
) -> None:
    doc = document()
    started = start(ann_api)
    _check(doc, "/calls", "post", started)
    _check(doc, "/calls", "post", ann_api.post("/calls", {"server": 1}))
    call = started.json()
    round_id = call["rounds"][0]["id"]
    _check(doc, "/calls/{id}", "get", ann_api.get(f"/calls/{call['id']}"))
    _check(doc, "/calls/{id}", "get", ann_api.get("/calls/0"))
    _check(doc, "/rounds", "get", ann_api.get("/rounds"))
    bad = {"responses": {"approval": {"action": "accept", "content": {"replicas": 0}}}}
    _check(
        doc, "/rounds/{id}/responses", "post", ann_api.post(f"/rounds/{round_id}/responses", bad)
    )
    good = {"responses": {"approval": {"action": "accept", "content": APPROVAL}}}
    _check(
        doc, "/rounds/{id}/responses", "post", ann_api.post(f"/rounds/{round_id}/responses", good)
    )
    _check(
        doc, "/rounds/{id}/responses", "post", ann_api.post(f"/rounds/{round_id}/responses", good)
    )
    _check(doc, "/calls/{id}", "get", ann_api.get(f"/calls/{call['id']}"))
    _check(doc, "/calls/{id}/cancel", "post", ann_api.post(f"/calls/{call['id']}/cancel"))
    _check(doc, "/servers", "get", op_api.get("/servers"))
    _check(doc, "/servers", "post", ann_api.post("/servers", {}))
    _check(doc, "/servers/{name}", "get", op_api.get("/servers/peer"))
    _check(doc, "/servers/{name}", "patch", op_api.patch("/servers/peer", {"title": "P"}))
    _check(doc, "/servers/{name}/test", "post", op_api.post("/servers/peer/test"))
    _check(doc, "/calls", "post", Api(None).post("/calls", {}))


def test_the_reference_page_renders_the_document_without_foreign_assets() -> None:
    assert Client().get("/api/v1/docs")["Location"] == "/api/v1/docs/"
    response = Client().get("/api/v1/docs/")
    assert response.status_code == 200
    html = response.content.decode()
    for path, item in _doc()["paths"].items():
        for method in item:
            assert f"{method.upper()} /api/v1{path}" in html
    assert 'id="model-CallOut"' in html and "inputRequests" in html
    assert "http://" not in html.replace("http://testserver", "") and "https://" not in html


def test_every_problem_type_the_code_uses_is_documented_on_the_page() -> None:
    import re
    from pathlib import Path

    from mrtrweb.api.problems import KINDS

    package = Path(__file__).resolve().parents[2] / "mrtrweb" / "api"
    source = "".join(p.read_text() for p in package.glob("*.py"))
    used = set(re.findall(r'kind="([a-z-]+)"', source))
    assert used == set(KINDS)
    html = Client().get("/api/v1/docs/").content.decode()
    for kind in KINDS:
        assert f'id="problem-{kind}"' in html


def test_starting_a_call_documents_the_idempotency_key() -> None:
    operation = _doc()["paths"]["/calls"]["post"]
    (header,) = [p for p in operation["parameters"] if p["in"] == "header"]
    assert header["name"] == "Idempotency-Key" and header["required"] is False
    assert header["schema"]["maxLength"] == 255
    assert {"200", "201", "422", "503"} <= set(operation["responses"])
    assert "Idempotent-Replayed" in operation["responses"]["200"]["headers"]
    assert "Retry-After" in operation["responses"]["503"]["headers"]
