"""The answer deadline and its cap on the operators' console and the API; a redirect on test."""

from __future__ import annotations

import re
from typing import Any

import pytest

from mrtrweb.servers.models import Connection
from tests.api.support import api_for
from tests.servers.conftest import signed_in
from tests.servers.test_console import form_data, text_of, url

pytestmark = pytest.mark.django_db


def test_the_console_sets_both_and_shows_them(operator: Any) -> None:
    web = signed_in(operator)
    page = web.get(url("create"))
    html = page.content.decode()
    for name, default in (("answer_deadline", "60.0"), ("answer_deadline_max", "600.0")):
        (tag,) = re.findall(rf'<input[^>]*name="{name}"[^>]*>', html)
        assert f'value="{default}"' in tag and 'type="number"' in tag
    assert "Answer deadline (seconds)" in text_of(page)
    assert "Longest answer with progress (seconds)" in text_of(page)

    data = form_data(answer_deadline="5", answer_deadline_max="120")
    assert web.post(url("create"), data).status_code == 303
    conn = Connection.objects.get(name="peer")
    assert (conn.answer_deadline, conn.answer_deadline_max) == (5.0, 120.0)
    settings = conn.client_settings()
    assert (settings.answer_deadline, settings.answer_deadline_max) == (5.0, 120.0)


def test_the_cap_is_at_least_the_deadline(operator: Any) -> None:
    web = signed_in(operator)
    page = web.post(url("create"), form_data(answer_deadline="60", answer_deadline_max="30"))
    assert page.status_code == 422
    assert "At least the answer deadline" in text_of(page)
    assert not Connection.objects.exists()


def test_the_api_reads_and_sets_them(operator: Any) -> None:
    Connection.objects.create(name="billing", url="http://127.0.0.1:1/mcp")
    api = api_for(operator)
    shown = api.get("/servers/billing").json()
    assert (shown["answerDeadline"], shown["answerDeadlineMax"]) == (60.0, 600.0)
    response = api.patch("/servers/billing", {"answerDeadline": 20, "answerDeadlineMax": 90})
    assert response.status_code == 200, response.content
    conn = Connection.objects.get()
    assert (conn.answer_deadline, conn.answer_deadline_max) == (20.0, 90.0)
    refused = api.patch("/servers/billing", {"answerDeadlineMax": 5})
    assert refused.status_code == 422
    assert refused.json()["errors"][0]["pointer"] == "/answerDeadlineMax"


def test_testing_a_server_that_redirects_says_so(operator: Any, peer_factory: Any) -> None:
    from mrtrweb.mcp import forget_era

    peer = peer_factory("limits_server", "--redirect-all", "https://moved.example/mcp")
    forget_era(peer.url)
    conn = Connection.objects.create(name="moved", url=peer.url)
    text = text_of(signed_in(operator).post(url("test", conn)))
    assert "Redirected" in text and "does not follow redirects" in text
    assert "The server redirected to https://moved.example/mcp" in text
