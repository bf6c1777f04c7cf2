"""Single sign-on in Chromium: the app served with OIDC configured against the test provider
(tests/peers/oidc_provider.py, on loopback), the browser going to the provider and back.

An operator whose provider checked a second factor (``amr`` holds ``mfa``) lands on the page
they asked for; one whose provider did not is sent to set up an authenticator app here."""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.peers.oidc_provider import CLIENT_ID, CLIENT_SECRET, OidcProvider
from tests.support.processes import app_environment, wait_until_served

from .conftest import LiveApp, _new_page, _start_web, assert_accessible, expect

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def provider() -> Iterator[OidcProvider]:
    running = OidcProvider(redirect_uris=[]).start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="module")
def sso_app(provider: OidcProvider) -> Iterator[LiveApp]:
    root = Path(tempfile.mkdtemp(prefix="mrtrweb-sso-"))
    app = LiveApp(
        root=root,
        env=app_environment(
            root,
            OIDC_RP_CLIENT_ID=CLIENT_ID,
            OIDC_RP_CLIENT_SECRET=CLIENT_SECRET,
            OIDC_OP_ISSUER=provider.issuer,
            MRTRWEB_OIDC_NAME="Example SSO",
            MRTRWEB_OIDC_GROUP_MAP="idp-ops=Operators",
        ),
    )
    try:
        app.migrate()
        app.pick_port()
        provider.redirect_uris.append(f"{app.base_url}/oidc/callback/")
        _start_web(app)
        wait_until_served(app)
        yield app
    finally:
        app.stop()
        shutil.rmtree(root, ignore_errors=True)


def _sign_in_with_the_provider(page: Any) -> None:
    page.goto("/accounts/login/?next=/operators/")
    assert_accessible(page)
    page.get_by_role("link", name="Sign in with Example SSO").click()
    page.wait_for_load_state()


def test_operators_sign_in_through_the_provider(
    browser: Any, sso_app: LiveApp, provider: OidcProvider
) -> None:
    pages = []
    try:
        provider.person = {
            "sub": "idp-ops-1",
            "preferred_username": "olivia",
            "groups": ["idp-ops"],
            "amr": ["pwd", "mfa"],
        }
        trusted = _new_page(browser, sso_app)
        pages.append(trusted)
        _sign_in_with_the_provider(trusted)
        expect(trusted).to_have_url(re.compile(r"/operators/$"))
        expect(trusted.locator(".session")).to_contain_text("olivia")

        provider.person = {
            "sub": "idp-ops-2",
            "preferred_username": "oscar",
            "groups": ["idp-ops"],
            "amr": ["pwd"],
        }
        untrusted = _new_page(browser, sso_app)
        pages.append(untrusted)
        _sign_in_with_the_provider(untrusted)
        expect(untrusted).to_have_url(re.compile(r"/account/two-step/set-up/\?next="))
        expect(untrusted.locator(".session")).to_contain_text("oscar")

        # A token the provider got wrong: back on the sign-in page, told so.
        provider.tamper = "signature"
        refused = _new_page(browser, sso_app)
        pages.append(refused)
        _sign_in_with_the_provider(refused)
        expect(refused).to_have_url(re.compile(r"/accounts/login/$"))
        expect(refused.get_by_text("Signing in with Example SSO did not work")).to_be_visible()
    finally:
        for each in pages:
            each.context.close()
