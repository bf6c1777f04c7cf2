"""The Django floor's two endpoints (bench/django_floor.py) answer as the bench expects: the
trivial view only for a signed-in person and with the CSRF check on, the bare ASGI endpoint
without Django at all."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from bench.django_floor import BARE_PATH, FLOOR_PATH, application


@pytest.mark.django_db
@pytest.mark.urls("bench.urls")
def test_floor_view_answers_a_signed_in_post_with_303_and_checks_csrf() -> None:
    user = get_user_model().objects.create_user("pat", password="pw-pat-123")
    anonymous = Client(enforce_csrf_checks=True)
    assert anonymous.post(FLOOR_PATH).status_code == 403

    browser = Client(enforce_csrf_checks=True)
    browser.force_login(user)
    assert browser.get(FLOOR_PATH).status_code == 200
    # No token: refused by the CSRF middleware, as the answer form would be.
    assert browser.post(FLOOR_PATH, {"action": "accept"}).status_code == 403
    token = browser.cookies["csrftoken"].value
    answered = browser.post(FLOOR_PATH, {"action": "accept", "csrfmiddlewaretoken": token})
    assert answered.status_code == 303
    assert answered["Location"] == FLOOR_PATH


async def test_bare_endpoint_answers_without_django() -> None:
    seen: list[Any] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await application(scope, receive, send)
        seen.append(scope["path"])

    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        response = await client.post(BARE_PATH, data={"action": "accept"})
    assert response.status_code == 303
    assert response.headers["location"] == BARE_PATH
    assert seen == [BARE_PATH]
