"""The security headers on the site's responses, and the markup that the CSP relies on.

The browser's side (nothing refused while every role walks its pages) is
tests/browser/test_csp.py; here, with Django's test client, the headers themselves.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from mrtrweb.api.models import ApiToken

REPO = Path(__file__).resolve().parents[2]

POLICY = {
    "default-src": ["'self'"],
    "script-src": ["'self'"],
    "style-src": ["'self'"],
    "img-src": ["'self'", "data:"],
    "media-src": ["'self'", "data:"],
    "connect-src": ["'self'"],
    "font-src": ["'self'"],
    "form-action": ["'self'"],
    "frame-ancestors": ["'none'"],
    "base-uri": ["'none'"],
    "object-src": ["'none'"],
}


HEADERS = {
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cross-Origin-Opener-Policy": "same-origin",
}
DENIED_FEATURES = ("camera", "microphone", "geolocation", "payment", "usb", "serial", "hid")


def policy_of(response: Any) -> dict[str, list[str]]:
    header = response["Content-Security-Policy"]
    directives = [part.split() for part in header.split(";") if part.strip()]
    return {name: values for name, *values in directives}


def assert_secured(response: Any) -> None:
    assert policy_of(response) == POLICY
    assert {name: response.get(name) for name in HEADERS} == HEADERS
    permissions = dict(item.split("=") for item in response["Permissions-Policy"].split(", "))
    assert all(permissions[feature] == "()" for feature in DENIED_FEATURES), permissions


@pytest.fixture
def signed_in(db: Any) -> Client:
    client = Client()
    client.force_login(get_user_model().objects.create_superuser("root", "", "pw-root-123"))
    return client


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/", "/accounts/login/", "/api/v1/docs/", "/healthz"])
def test_every_page_carries_the_headers(path: str) -> None:
    response = Client().get(path)

    assert response.status_code == 200
    assert_secured(response)


@pytest.mark.parametrize(
    "path", ["/inbox/", "/dashboard/rounds/", "/operators/", "/account/tokens/", "/admin/"]
)
def test_signed_in_pages_and_the_admin_carry_the_headers(signed_in: Client, path: str) -> None:
    response = signed_in.get(path)

    assert response.status_code == 200
    assert_secured(response)


@pytest.mark.django_db
def test_refusals_carry_the_headers_too() -> None:
    client = Client()
    missing = client.get("/calls/999999/")
    for _ in range(5):
        locked = client.post("/accounts/login/", {"username": "x", "password": "y"})

    assert missing.status_code == 302  # to the sign-in page
    assert_secured(missing)
    assert locked.status_code == 429
    assert_secured(locked)


@pytest.mark.django_db
def test_the_api_carries_the_headers_too() -> None:
    user = get_user_model().objects.create_user("ann", password="pw-ann-123")
    _, token = ApiToken.issue(user, "ci")

    response = Client().get("/api/v1/servers", headers={"Authorization": f"Bearer {token}"})

    assert response.status_code == 200
    assert_secured(response)


def test_nothing_inline_is_allowed() -> None:
    sources = " ".join(" ".join(values) for values in POLICY.values())
    assert "unsafe" not in sources and "nonce-" not in sources and "sha256-" not in sources


# What the policy refuses must not be in the markup: a script element without src, a <style>
# element, a style attribute, an on* handler or a javascript: URL.
INLINE = re.compile(
    r"<script(?![^>]*\bsrc=)[^>]*>|<style\b|\sstyle\s*=|\son[a-z]+\s*=|javascript:", re.IGNORECASE
)


def _markup_files() -> list[Path]:
    templates = sorted((REPO / "templates").rglob("*.html"))
    # Python that writes HTML; the demo server (mrtrweb/demo) stands for a foreign site.
    emitting = [
        path
        for path in sorted((REPO / "mrtrweb").rglob("*.py"))
        if "demo" not in path.parts and "format_html" in path.read_text(encoding="utf-8")
    ]
    return templates + emitting


@pytest.mark.parametrize("path", _markup_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_no_inline_script_or_style_in_the_markup(path: Path) -> None:
    found = [match.group(0) for match in INLINE.finditer(path.read_text(encoding="utf-8"))]

    assert not found, f"{path.relative_to(REPO)} has {found}"


@pytest.mark.django_db
def test_a_failed_csrf_check_shows_a_page_the_policy_allows() -> None:
    response = Client(enforce_csrf_checks=True).post(
        "/accounts/login/", {"username": "x", "password": "y"}
    )

    assert response.status_code == 403
    assert b"The form could not be sent" in response.content
    assert not INLINE.search(response.content.decode())
    assert_secured(response)
