"""The websocket origin rule (mrtrweb/live/origins.py) is the rule Django's CSRF check applies to
a form: scheme, host and port, ``CSRF_TRUSTED_ORIGINS`` with its wildcard subdomains,
``SECURE_PROXY_SSL_HEADER``, and ``ALLOWED_HOSTS`` for the ``Host``.

Every case is checked twice: against the rule, and as a real POST of the sign-in form through
Django's middleware with the same scheme, ``Host`` and ``Origin`` (a valid CSRF token, so only
the origin decides). The two must agree, except where a browser never sends a websocket
handshake without an ``Origin``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.test import Client
from django.urls import reverse

from mrtrweb.live.origins import origin_allowed

pytestmark = pytest.mark.django_db

PROXY_HTTPS = ("HTTP_X_FORWARDED_PROTO", "https")


@dataclass(frozen=True)
class Case:
    id: str
    host: str
    origin: str | None
    allowed: bool
    scheme: str = "ws"
    headers: tuple[tuple[str, str], ...] = ()
    settings: dict[str, Any] = field(default_factory=dict)


TRUSTED = {"CSRF_TRUSTED_ORIGINS": ["https://mrtr.example.com", "https://*.apps.example.com"]}
BEHIND_PROXY = {"SECURE_PROXY_SSL_HEADER": PROXY_HTTPS}
# The proxy's public name is trusted; uvicorn sees an internal Host.
INTERNAL = {**TRUSTED, "ALLOWED_HOSTS": ["mrtr.internal", "mrtr.example.com"]}

CASES = [
    # The page's own origin, port included.
    Case("same-origin", "127.0.0.1:8000", "http://127.0.0.1:8000", True),
    Case("same-origin-no-port", "127.0.0.1", "http://127.0.0.1", True),
    Case("same-origin-localhost", "localhost:8000", "http://localhost:8000", True),
    Case("same-origin-ipv6", "[::1]:8000", "http://[::1]:8000", True),
    # Another port of the same host is another origin.
    Case("other-port", "127.0.0.1:8000", "http://127.0.0.1:9999", False),
    Case("port-left-out", "127.0.0.1:8000", "http://127.0.0.1", False),
    Case("port-added", "127.0.0.1", "http://127.0.0.1:8000", False),
    Case("other-host", "127.0.0.1:8000", "http://localhost:8000", False),
    Case("other-site", "127.0.0.1:8000", "https://evil.example", False),
    # Scheme: ws answers http pages, wss answers https pages.
    Case("https-page-on-ws", "127.0.0.1:8000", "https://127.0.0.1:8000", False),
    Case("https-page-on-wss", "127.0.0.1:8000", "https://127.0.0.1:8000", True, "wss"),
    Case("http-page-on-wss", "127.0.0.1:8000", "http://127.0.0.1:8000", False, "wss"),
    # Behind a proxy that ends TLS, as Django reads SECURE_PROXY_SSL_HEADER.
    Case(
        "proxy-https",
        "localhost",
        "https://localhost",
        True,
        headers=(("x-forwarded-proto", "https"),),
        settings=BEHIND_PROXY,
    ),
    Case(
        "proxy-https-http-page",
        "localhost",
        "http://localhost",
        False,
        headers=(("x-forwarded-proto", "https"),),
        settings=BEHIND_PROXY,
    ),
    Case(
        "proxy-header-not-trusted",
        "localhost",
        "https://localhost",
        False,
        headers=(("x-forwarded-proto", "https"),),
    ),
    # DNS rebinding: the page's own origin, but a host the site does not answer to.
    Case("host-not-allowed", "evil.example:8000", "http://evil.example:8000", False),
    # CSRF_TRUSTED_ORIGINS: exact origins, and wildcard subdomains.
    Case("trusted", "mrtr.internal", "https://mrtr.example.com", True, settings=INTERNAL),
    Case(
        "trusted-wrong-scheme", "mrtr.internal", "http://mrtr.example.com", False, settings=INTERNAL
    ),
    Case(
        "trusted-wrong-port",
        "mrtr.internal",
        "https://mrtr.example.com:8443",
        False,
        settings=INTERNAL,
    ),
    Case(
        "trusted-subdomain", "mrtr.internal", "https://a.apps.example.com", True, settings=INTERNAL
    ),
    Case(
        "trusted-deeper-subdomain",
        "mrtr.internal",
        "https://x.y.apps.example.com",
        True,
        settings=INTERNAL,
    ),
    Case(
        "trusted-subdomain-wrong-scheme",
        "mrtr.internal",
        "http://a.apps.example.com",
        False,
        settings=INTERNAL,
    ),
    Case(
        "trusted-subdomain-other-port",
        "mrtr.internal",
        "https://a.apps.example.com:8443",
        False,
        settings=INTERNAL,
    ),
    Case(
        "look-alike-domain",
        "mrtr.internal",
        "https://evilapps.example.com",
        False,
        settings=INTERNAL,
    ),
    Case("untrusted", "mrtr.internal", "https://other.example.com", False, settings=INTERNAL),
    # A trusted origin does not make an unknown Host acceptable (any page would 400 on it).
    Case(
        "trusted-origin-unknown-host",
        "evil.example",
        "https://mrtr.example.com",
        False,
        settings=INTERNAL,
    ),
    # Opaque origins: sandboxed frames, file: pages, data: URLs.
    Case("null", "127.0.0.1:8000", "null", False),
    Case("garbage", "127.0.0.1:8000", "http://[", False),
]


def scope_of(case: Case) -> dict[str, Any]:
    headers = [(b"host", case.host.encode())]
    if case.origin is not None:
        headers.append((b"origin", case.origin.encode()))
    headers += [(name.encode(), value.encode()) for name, value in case.headers]
    return {
        "type": "websocket",
        "scheme": case.scheme,
        "path": "/ws/inbox/",
        "query_string": b"",
        "headers": headers,
        "server": ("127.0.0.1", 8000),
    }


def apply(settings: Any, case: Case) -> None:
    for name, value in case.settings.items():
        setattr(settings, name, value)
    if "ALLOWED_HOSTS" not in case.settings:
        settings.ALLOWED_HOSTS = ["localhost", "127.0.0.1", "[::1]"]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_the_socket_rule(settings: Any, case: Case) -> None:
    apply(settings, case)
    assert origin_allowed(scope_of(case)) is case.allowed


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_form_posted_from_the_same_page_gets_the_same_answer(settings: Any, case: Case) -> None:
    client = Client(enforce_csrf_checks=True)
    login = reverse("login")
    # A valid token, so that only the origin (or the host) can refuse the post.
    client.get(login)
    token = client.cookies[django_settings.CSRF_COOKIE_NAME].value
    apply(settings, case)
    extra = {f"HTTP_{name.upper().replace('-', '_')}": value for name, value in case.headers}
    response = client.post(
        login,
        {"username": "nobody", "password": "wrong", "csrfmiddlewaretoken": token},
        HTTP_HOST=case.host,
        HTTP_ORIGIN=case.origin,
        secure=case.scheme == "wss",
        **extra,
    )
    # 200: the form again (wrong password), so the origin passed; 403 (CSRF) or 400 (host).
    assert (response.status_code == 200) is case.allowed, response.status_code


@pytest.mark.parametrize("origin", [None, ""])
def test_a_handshake_without_an_origin_is_refused(settings: Any, origin: str | None) -> None:
    """Browsers always send one; only a program without the page's rules leaves it out, and
    brings its own cookies: no page borrows a signed-in person's session that way."""
    case = Case("no-origin", "127.0.0.1:8000", origin, False)
    apply(settings, case)
    assert origin_allowed(scope_of(case)) is False


def test_two_origin_headers_are_refused(settings: Any) -> None:
    case = Case("two", "127.0.0.1:8000", "http://127.0.0.1:8000", False)
    apply(settings, case)
    scope = scope_of(case)
    scope["headers"].append((b"origin", b"http://127.0.0.1:8000"))
    assert origin_allowed(scope) is False


def test_without_a_host_header_the_server_address_is_the_host(settings: Any) -> None:
    """As Django reads an HTTP request: SERVER_NAME and SERVER_PORT."""
    settings.ALLOWED_HOSTS = ["127.0.0.1"]
    scope = scope_of(Case("x", "127.0.0.1:8000", "http://127.0.0.1:8000", True))
    scope["headers"] = [h for h in scope["headers"] if h[0] != b"host"]
    assert origin_allowed(scope) is True
    scope["headers"] = [(b"origin", b"http://127.0.0.1:9999")]
    assert origin_allowed(scope) is False
