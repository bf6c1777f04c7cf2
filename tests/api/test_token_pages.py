"""The API tokens page (its own access tests: the tokens namespace is not in the matrix) and
``manage.py api_token``."""

from __future__ import annotations

import re
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from mrtrweb.api.models import ApiToken
from tests.api.support import Api, person

pytestmark = pytest.mark.django_db


def _csrf(client: Client, path: str = "/account/tokens/") -> str:
    page = client.get(path)
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.content.decode())[1]


def token_names(page: Any) -> list[str]:
    """The names in the page's list of tokens (the page also holds random CSRF tokens)."""
    return re.findall(r"<tr>\s*<td>(.*?)</td>", page.content.decode())


def _signed_in(user: Any) -> Client:
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    return client


def test_a_token_is_shown_once_then_listed_by_prefix_and_revoked() -> None:
    ann = person("ann")
    client = _signed_in(ann)
    assert "API tokens" in client.get("/").content.decode()  # linked from the header
    made = client.post("/account/tokens/", {"name": "ci", "csrfmiddlewaretoken": _csrf(client)})
    assert made.status_code == 201
    plain = re.search(r'<code id="token-text">(mrtr_[^<]+)</code>', made.content.decode())[1]
    assert made["Cache-Control"].startswith("max-age=0")
    token = ApiToken.objects.get()
    assert token.user == ann and token.name == "ci" and ApiToken.authenticate(plain) == token
    assert token.webhook_secret in made.content.decode()
    assert token.standard_webhook_secret in made.content.decode()
    assert token_names(client.get("/account/tokens/")) == ["ci"]
    listed = client.get("/account/tokens/").content.decode()
    assert plain not in listed and f"mrtr_{token.prefix}_" in listed
    assert Api(plain).get("/rounds").status_code == 200
    # The list's button only asks: revoking cannot be undone.
    asked = client.post(
        f"/account/tokens/{token.pk}/revoke/", {"csrfmiddlewaretoken": _csrf(client)}
    )
    assert asked.status_code == 200
    page = asked.content.decode()
    assert "Revoke the token “ci”?" in page and 'name="confirmed" value="1"' in page
    assert 'href="/account/tokens/"' in page  # "No, keep it" goes back
    assert Api(plain).get("/rounds").status_code == 200
    revoked = client.post(
        f"/account/tokens/{token.pk}/revoke/",
        {"csrfmiddlewaretoken": _csrf(client), "confirmed": "1"},
    )
    assert revoked.status_code == 303
    assert Api(plain).get("/rounds").status_code == 401


def test_the_pages_need_a_session_csrf_and_ones_own_token() -> None:
    ann, bob = person("ann"), person("bob")
    token, _ = ApiToken.issue(ann, "ci")
    anonymous = Client()
    assert anonymous.get("/account/tokens/").status_code == 302
    assert anonymous.post(f"/account/tokens/{token.pk}/revoke/").status_code == 302
    client = _signed_in(bob)
    assert client.post("/account/tokens/", {"name": "x"}).status_code == 403  # no CSRF token
    assert "ci" not in token_names(client.get("/account/tokens/"))
    stolen = client.post(
        f"/account/tokens/{token.pk}/revoke/", {"csrfmiddlewaretoken": _csrf(client)}
    )
    assert stolen.status_code == 404
    token.refresh_from_db()
    assert token.is_active and not ApiToken.objects.filter(user=bob).exists()


def test_the_webhook_secret_is_shown_to_its_owner_only_on_a_post() -> None:
    ann, bob = person("ann"), person("bob")
    token, _ = ApiToken.issue(ann, "ci")
    client = _signed_in(ann)
    path = f"/account/tokens/{token.pk}/webhook-secret/"
    assert token.webhook_secret not in client.get("/account/tokens/").content.decode()
    assert client.get(path).status_code == 405
    assert client.post(path).status_code == 403  # no CSRF token
    shown = client.post(path, {"csrfmiddlewaretoken": _csrf(client)})
    assert shown.status_code == 200 and token.webhook_secret in shown.content.decode()
    assert token.standard_webhook_secret in shown.content.decode()
    assert shown["Cache-Control"].startswith("max-age=0")
    other = _signed_in(bob)
    refused = other.post(path, {"csrfmiddlewaretoken": _csrf(other)})
    assert refused.status_code == 404 and token.webhook_secret not in refused.content.decode()
    assert Client().post(path).status_code == 302


def test_the_new_token_is_in_a_box_with_a_copy_button_of_our_own_script() -> None:
    client = _signed_in(person("ann"))

    made = client.post("/account/tokens/", {"name": "ci", "csrfmiddlewaretoken": _csrf(client)})

    page = made.content.decode()
    box = re.search(r'<div class="secret-box">(.*?)</div>', page, re.S)[1]
    assert '<code id="token-text">mrtr_' in box
    # Hidden until the script runs: without JavaScript the text is selected by hand.
    assert '<button type="button" class="copy-button" data-copy="token-text"' in box
    assert " hidden>Copy</button>" in box
    assert 'role="status" data-copied-for="token-text"' in box
    script = re.search(r'<script src="(/static/mrtrweb/copy\.js)" defer></script>', page)[1]
    served = client.get(script)
    assert served.status_code == 200
    assert b"data-copy" in b"".join(served.streaming_content)
    # No inline script or handler for the CSP to refuse.
    assert "onclick" not in page and not re.search(r"<script(?![^>]*\bsrc=)", page)


def test_a_nameless_token_is_refused() -> None:
    client = _signed_in(person("ann"))
    response = client.post("/account/tokens/", {"name": "", "csrfmiddlewaretoken": _csrf(client)})
    assert response.status_code == 422 and not ApiToken.objects.exists()


def test_the_command_issues_lists_and_revokes() -> None:
    person("ann")
    out = StringIO()
    err = StringIO()
    call_command("api_token", "ann", "--name", "deploy", stdout=out, stderr=err)
    plain = out.getvalue().strip()
    token = ApiToken.authenticate(plain)
    assert token is not None and token.name == "deploy"
    assert token.webhook_secret in err.getvalue()
    assert token.standard_webhook_secret in err.getvalue()
    listing = StringIO()
    call_command("api_token", "ann", "--list", stdout=listing)
    assert f"mrtr_{token.prefix}_" in listing.getvalue() and plain not in listing.getvalue()
    call_command("api_token", "ann", "--revoke", f"mrtr_{token.prefix}", stdout=StringIO())
    assert ApiToken.authenticate(plain) is None
    with pytest.raises(CommandError):
        call_command("api_token", "ann", "--revoke", token.prefix, stdout=StringIO())
    with pytest.raises(CommandError):
        call_command("api_token", "ghost", stdout=StringIO())
