"""Two-step sign-in in Chromium: an operator without an authenticator app is sent to set one
up (QR code and secret, a code, backup codes shown once), and signing in again asks for a
code. The codes are what an app holding the page's secret shows (django-otp's TOTP).

With ``MRTRWEB_SCREENSHOTS=docs/images`` the screens are saved for docs/user-guide.md
(``two-step-*``)."""

from __future__ import annotations

import re
import time
from base64 import b32decode
from typing import Any

import pytest
from django_otp.oath import TOTP

from .conftest import LiveApp, assert_accessible, expect, shoot

pytestmark = pytest.mark.browser

OPERATOR = ("tessa", "tessa-browser-pw-1")

_CREATE = """
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
user = get_user_model().objects.create_user({name!r}, password={password!r})
user.groups.add(Group.objects.get(name="Operators"))
"""


def _app_code(secret: str, steps_ahead: int = 0) -> str:
    totp = TOTP(b32decode(secret.replace(" ", "")))
    totp.time = time.time() + 30 * steps_ahead
    return f"{totp.token():06d}"


def _with_time_left(seconds: float = 4.0) -> None:
    """Wait for the next 30-second step of the app's clock when this one ends within
    ``seconds``: a code typed in one step and checked in the next is accepted (django-otp's
    tolerance), but the device then keeps that step's drift, and the app's next code, taken
    as the clock runs, falls outside the window the server looks in (a failed clean run)."""
    left = 30 - time.time() % 30
    if left < seconds:
        time.sleep(left + 0.1)


def _password(page: Any, next_path: str) -> None:
    page.goto(f"/accounts/login/?next={next_path}")
    page.get_by_label("Username").fill(OPERATOR[0])
    page.get_by_label("Password").fill(OPERATOR[1])
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.wait_for_load_state()


def test_an_operator_sets_up_an_app_then_signs_in_with_a_code(page: Any, live_app: LiveApp) -> None:
    live_app.shell(_CREATE.format(name=OPERATOR[0], password=OPERATOR[1]))

    _password(page, "/operators/")
    # Nowhere to go but enrolment.
    expect(page).to_have_url(re.compile(r"/account/two-step/set-up/\?next=%2Foperators%2F$"))
    expect(page.get_by_role("heading", name="Set up two-step sign-in", level=1)).to_be_visible()
    qr = page.get_by_role("img", name=re.compile("QR code"))
    expect(qr).to_be_visible()
    assert qr.evaluate("img => img.naturalWidth") > 0, "the QR code did not render"
    assert_accessible(page)
    shoot(page, "two-step-set-up")
    page.get_by_role("link", name="Connections").click()
    expect(page).to_have_url(re.compile(r"/account/two-step/set-up/"))

    secret = page.locator("#totp-secret").inner_text()
    page.get_by_label("Code").fill("123456" if _app_code(secret) != "123456" else "654321")
    page.get_by_role("button", name="Turn on two-step sign-in").click()
    expect(page.get_by_text("That code is not right")).to_be_visible()
    # The first wrong code makes the next try wait a second (django-otp's throttling).
    time.sleep(1.1)
    _with_time_left()
    page.get_by_label("Code").fill(_app_code(secret))
    page.get_by_role("button", name="Turn on two-step sign-in").click()
    expect(page.get_by_role("heading", name="Two-step sign-in is on", level=1)).to_be_visible()
    codes = page.locator("#backup-codes li")
    expect(codes).to_have_count(10)
    assert_accessible(page)
    shoot(page, "two-step-backup-codes")
    page.get_by_role("link", name="Continue").click()
    expect(page).to_have_url(re.compile(r"/operators/$"))

    page.get_by_role("button", name="Sign out").click()
    page.wait_for_load_state()
    _password(page, "/operators/")
    expect(page).to_have_url(re.compile(r"/account/two-step/code/\?next=%2Foperators%2F$"))
    assert_accessible(page)
    shoot(page, "two-step-code")
    # The code of the step used to enrol is spent; the app's next one is taken.
    page.get_by_label("Code").fill(_app_code(secret, steps_ahead=1))
    page.get_by_role("button", name="Verify", exact=True).click()
    expect(page).to_have_url(re.compile(r"/operators/$"))
    expect(page.get_by_role("heading", level=1)).not_to_have_text(re.compile("Two-step"))
