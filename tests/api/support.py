"""People, tokens and a client for the JSON API tests; calls run on the real fastmcp peer."""

from __future__ import annotations

import json
from typing import Any

from django.test import Client

from mrtrweb.api.models import ApiToken
from tests.inbox.support import admin, connection, expose, operator, person  # noqa: F401

APPROVAL = {"approve": True, "replicas": 3, "window": "tonight", "notify": ["ops"]}


class Api:
    """A Django test client that speaks JSON with a bearer token (and enforces CSRF, as a
    browser's cookies would not help here)."""

    def __init__(self, token: str | None) -> None:
        self.client = Client(enforce_csrf_checks=True)
        self.token = token

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def get(self, path: str, **params: Any) -> Any:
        return self.client.get("/api/v1" + path, params, headers=self._headers())

    def post(
        self,
        path: str,
        body: Any = None,
        *,
        raw: bytes | str | None = None,
        headers: dict[str, str] | None = None,
    ) -> Any:
        data = raw if raw is not None else json.dumps(body if body is not None else {})
        return self.client.post(
            "/api/v1" + path,
            data,
            content_type="application/json",
            headers={**self._headers(), **(headers or {})},
        )

    def patch(self, path: str, body: Any) -> Any:
        return self.client.patch(
            "/api/v1" + path,
            json.dumps(body),
            content_type="application/json",
            headers=self._headers(),
        )


def api_for(user: Any) -> Api:
    _, plain = ApiToken.issue(user, "tests")
    return Api(plain)


def start(api: Api, server: str = "peer", name: str = "approve_deploy", **body: Any) -> Any:
    payload = {"server": server, "name": name, "arguments": {"service": "api"}, **body}
    return api.post("/calls", payload)


def problem(response: Any) -> dict[str, Any]:
    assert response["Content-Type"] == "application/problem+json", response.content
    data = response.json()
    assert data["status"] == response.status_code
    return data


def pointers(response: Any) -> list[str]:
    return [e.get("pointer") for e in problem(response)["errors"]]
