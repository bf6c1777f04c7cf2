import pytest
from django.contrib.staticfiles import finders
from django.urls import reverse

pytestmark = pytest.mark.django_db


def test_home_page_says_what_mrtrweb_is_and_how_to_start(client):
    response = client.get(reverse("core:home"))

    assert response.status_code == 200
    assert [t.name for t in response.templates][:2] == ["core/home.html", "base.html"]
    body = response.content.decode()
    assert "An MCP client for people" in body
    assert "make run" in body
    assert "mrtrweb/site.css" in body
    assert 'aria-label="Main"' in body  # the nav from base.html


def test_home_page_is_read_only(client):
    assert client.post(reverse("core:home")).status_code == 405


def test_healthz_answers_ok_in_plain_text(client):
    response = client.get("/healthz")

    assert response.status_code == 200
    assert response.content == b"ok"
    assert response["Content-Type"].startswith("text/plain")


def test_admin_sign_in_page_is_served(client):
    assert client.get(reverse("admin:login")).status_code == 200


def test_our_stylesheet_and_htmx_are_served(client):
    assert finders.find("mrtrweb/site.css")
    body = client.get(reverse("core:home")).content.decode()

    for url in ("/static/mrtrweb/site.css", "/static/django_htmx/htmx-2.min.js"):
        assert url in body
        response = client.get(url)
        assert response.status_code == 200, url
        assert b"".join(response.streaming_content)
