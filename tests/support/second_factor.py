"""Sessions that passed two-step sign-in, for the harnesses that sign people in.

Admins, operators and staff must pass a second factor (mrtrweb/accounts), so every harness
that signs one of them in passes it too, the way a person would or as django-otp records it:

- in process, :func:`verify_client` gives a Django test client's session a confirmed
  authenticator device, as ``django_otp.login`` does after a right code (tests/conftest.py does
  it for every ``force_login`` of such a person);
- for a served app, :data:`ENROL` (Python for ``manage.py shell``) gives a person the harness's
  authenticator, whose codes :func:`code` computes; :func:`pass_code_page` (httpx) and
  :func:`pass_code_page_in_browser` (Playwright) enter one on the code page after the password.

The harness's authenticator counts in one-second steps instead of thirty, so a test can sign
the same person in again a second later (a code is accepted once per step).
"""

from __future__ import annotations

import re
import threading
import time
from typing import Any

from django_otp.oath import totp

# RFC 6238's test secret ("12345678901234567890"), hex-encoded as django-otp stores keys.
HARNESS_KEY = "3132333435363738393031323334353637383930"
HARNESS_STEP = 1
CODE_PAGE = "/account/two-step/code/"

ENROL = f"""
from django_otp.plugins.otp_totp.models import TOTPDevice
def enrol(user):
    return TOTPDevice.objects.create(
        user=user, name="test harness", key={HARNESS_KEY!r}, step={HARNESS_STEP}, confirmed=True
    )
"""

_CSRF_INPUT = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
_used_steps: dict[str, int] = {}
_lock = threading.Lock()


def code(key: str = HARNESS_KEY, step: int = HARNESS_STEP) -> str:
    """A code for ``key`` from a time step no earlier call used (waiting for the next step
    if needed), so a device never refuses it as replayed."""
    with _lock:
        while True:
            now = time.time()
            current = int(now // step)
            if current > _used_steps.get(key, -1):
                _used_steps[key] = current
                return f"{totp(bytes.fromhex(key), step=step, t0=0, digits=6, drift=0):06d}"
            time.sleep((current + 1) * step - now + 0.01)


def verify_client(client: Any, user: Any) -> None:
    """Mark a Django test client's session verified, as after a right code: with the person's
    confirmed device, made first for someone who must have one (an admin, operator or staff
    member); a person who needs none and has none is left as a password leaves them."""
    from django_otp import DEVICE_ID_SESSION_KEY
    from django_otp.plugins.otp_totp.models import TOTPDevice

    from mrtrweb.accounts.second_factor import is_required

    device = TOTPDevice.objects.filter(user=user, confirmed=True).first()
    # Judged on a fresh copy: the caller's object keeps no permission cache from here.
    if device is None and is_required(type(user)._default_manager.get(pk=user.pk)):
        device = TOTPDevice.objects.create(user=user, name="test harness", confirmed=True)
    if device is None:
        return
    session = client.session
    session[DEVICE_ID_SESSION_KEY] = device.persistent_id
    session.save()


def pass_code_page(client: Any) -> None:
    """After signing in with a password (httpx): enter a harness code when the code page asks
    for one; a person without a device is sent on, and nothing is done."""
    page = client.get(CODE_PAGE, follow_redirects=False)
    if page.status_code != 200:
        return
    token = _CSRF_INPUT.search(page.text)
    assert token, f"no CSRF token on the code page:\n{page.text[:1000]}"
    done = client.post(
        CODE_PAGE,
        data={"code": code(), "csrfmiddlewaretoken": token.group(1)},
        headers={"Referer": str(page.url)},
        follow_redirects=False,
    )
    if done.status_code not in (302, 303):
        main = done.text[done.text.find("<main") :]
        raise AssertionError(f"the code was refused ({done.status_code}):\n{main[:1500]}")


def pass_code_page_in_browser(page: Any) -> None:
    """After signing in with a password (Playwright): enter a harness code when the browser
    was sent to the code page."""
    if CODE_PAGE not in page.url:
        return
    page.get_by_label("Code").fill(code())
    page.get_by_role("button", name="Verify", exact=True).click()
    page.wait_for_load_state()
    assert CODE_PAGE not in page.url, f"the code was refused: {page.url}"
