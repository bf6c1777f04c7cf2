"""The connect page lets its form go on to the authorization server.

Its answer is a redirect to another site, and browsers hold a form's redirects to the page's
CSP ``form-action`` (Chromium blocked "Connect your account" in tests/browser/test_oauth.py
before the page named the authorization server there).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode, urlsplit

import pytest

from mrtrweb.authorizations.models import Discovery
from mrtrweb.servers.models import Connection
from tests.authorizations.conftest import signed_in
from tests.authorizations.test_views_connect import START, connect_url, go_to_server

pytestmark = pytest.mark.django_db


def _form_action(response: Any) -> list[str]:
    policy = response["Content-Security-Policy"]
    [directive] = [d.split()[1:] for d in policy.split(";") if d.split()[:1] == ["form-action"]]
    return directive


def test_the_connect_form_may_go_to_the_authorization_server(
    ada: Any, connection: Connection
) -> None:
    browser = signed_in(ada)
    assert not Discovery.objects.filter(connection=connection).exists()
    page = browser.get(connect_url(connection) + "?" + urlencode({"next": START}))
    assert page.status_code == 200
    # Discovered for the page (it names the server), and its origin is allowed.
    assert Discovery.objects.filter(connection=connection).exists()
    target = urlsplit(go_to_server(browser, connection))
    assert _form_action(page) == ["'self'", f"{target.scheme}://{target.netloc}"]


def test_other_pages_keep_form_action_self(ada: Any) -> None:
    page = signed_in(ada).get("/oauth/accounts/")
    assert _form_action(page) == ["'self'"]
