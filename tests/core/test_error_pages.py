"""The site's own 403, 404 and 500 pages, the one-line 403 log, and the favicon."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from django.db import connection
from django.test import Client, RequestFactory
from django.urls import reverse

from mrtrweb.core.errors import server_error
from mrtrweb.people.roles import END_USERS
from tests.servers.conftest import person, signed_in

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _production_like(settings: Any) -> None:
    settings.DEBUG = False


def _body(response: Any) -> str:
    return response.content.decode()


def test_a_403_shows_the_reason_the_site_header_and_a_way_back() -> None:
    eve = signed_in(person("eve", END_USERS))
    came_from = "http://testserver" + reverse("calls:list")

    response = eve.get(reverse("dashboard:rounds"), HTTP_REFERER=came_from)

    assert response.status_code == 403
    body = _body(response)
    assert "The dashboard is for admins." in body
    assert 'aria-label="Main"' in body and "site-header" in body
    assert f'href="{came_from}"' in body and "Back to the page you came from" in body
    assert f'href="{reverse("core:home")}"' in body
    assert "eve" in body  # who they are signed in as


def test_a_403_links_back_only_to_this_sites_own_pages() -> None:
    eve = signed_in(person("eve", END_USERS))

    body = _body(eve.get(reverse("dashboard:rounds"), HTTP_REFERER="https://evil.example/x"))

    assert "evil.example" not in body
    assert "Back to the page you came from" not in body


def test_a_403_is_one_warning_line_with_its_reason(caplog: pytest.LogCaptureFixture) -> None:
    eve = signed_in(person("eve", END_USERS))

    with caplog.at_level(logging.WARNING, logger="django.request"):
        eve.get(reverse("dashboard:rounds"))

    [record] = [r for r in caplog.records if r.name == "django.request"]
    assert record.levelno == logging.WARNING
    assert record.exc_info is None and not record.exc_text
    line = logging.Formatter("%(levelname)s %(name)s: %(message)s").format(record)
    assert line == (
        "WARNING django.request: Forbidden (Permission denied): /dashboard/rounds/ "
        "(The dashboard is for admins.)"
    )
    assert "\n" not in line and "Traceback" not in line


def test_a_404_of_an_unknown_address_says_what_was_not_found(client: Client) -> None:
    response = client.get("/no/such/<page>/", HTTP_REFERER="http://testserver/")

    assert response.status_code == 404
    body = _body(response)
    assert "This page is not here" in body
    # The address is shown, escaped; no list of URL patterns (that is DEBUG's page).
    assert "/no/such/&lt;page&gt;/" in body and "<page>" not in body
    assert "URLconf" not in body and "Resolver404" not in body
    assert 'aria-label="Main"' in body and f'href="{reverse("core:home")}"' in body
    assert 'href="http://testserver/"' in body


def test_a_404_from_get_object_or_404_names_what_is_missing_in_words() -> None:
    olga = signed_in(person("olga", "Operators"))

    response = olga.get(reverse("starting:start", kwargs={"connection": "gone"}))

    assert response.status_code == 404
    assert "There is no such connection here." in _body(response)
    assert "matches the given query" not in _body(response)


@pytest.mark.urls("tests.core.error_urls")
def test_a_500_is_the_sites_own_page_without_the_error() -> None:
    client = Client(raise_request_exception=False)

    response = client.get("/boom/")

    assert response.status_code == 500
    body = _body(response)
    assert "Something went wrong" in body and 'aria-label="Main"' in body
    assert "a bug in a view" not in body and "RuntimeError" not in body
    assert f'href="{reverse("core:home")}"' in body


@pytest.mark.urls("tests.core.error_urls")
def test_a_500_under_the_api_is_a_problem_not_a_page() -> None:
    response = Client(raise_request_exception=False).get("/api/v1/boom/")

    assert response.status_code == 500
    assert response["Content-Type"] == "application/problem+json"
    problem = response.json()
    assert problem["status"] == 500 and problem["type"].endswith("#problem-internal")
    assert "a bug in a view" not in _body(response)


def test_the_500_page_renders_without_touching_the_database() -> None:
    def refuse(*args: Any) -> Any:
        raise AssertionError("the 500 page queried the database")

    request = RequestFactory().get("/anything/")
    with connection.execute_wrapper(refuse):
        response = server_error(request)

    assert response.status_code == 500
    assert "Something went wrong" in _body(response)


def test_the_500_page_falls_back_to_plain_html(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: Any, **kwargs: Any) -> str:
        raise RuntimeError("the template is broken")

    monkeypatch.setattr("mrtrweb.core.errors.loader.render_to_string", broken)
    response = server_error(RequestFactory().get("/"))

    assert response.status_code == 500
    assert "Something went wrong" in _body(response) and "href='/'" in _body(response)


def test_the_favicon_is_the_sites_own_icon(client: Client) -> None:
    response = client.get("/favicon.ico")

    assert response.status_code == 302
    icon = client.get(response["Location"])
    assert icon.status_code == 200
    svg = b"".join(icon.streaming_content).decode()
    assert svg.startswith("<svg") and "mrtrweb" in svg
    assert 'rel="icon"' in _body(client.get(reverse("core:home")))
