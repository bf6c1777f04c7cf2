"""Two-step sign-in, through the real pages with Django's test client: people sign in with
their password on the login page and type the codes an authenticator app would show
(computed from the secret the enrolment page gives, with django-otp's own TOTP)."""

from __future__ import annotations

import re
import time
from base64 import b32decode
from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client
from django.utils import timezone
from django_otp.oath import TOTP
from django_otp.plugins.otp_static.models import StaticToken
from django_otp.plugins.otp_totp.models import TOTPDevice

from mrtrweb.api.models import ApiToken
from tests.inbox.support import admin, operator, person

pytestmark = pytest.mark.django_db

CODE = "/account/two-step/code/"
ENROL = "/account/two-step/set-up/"
PAGE = "/account/two-step/"


def password_sign_in(user: Any, next_path: str = "/") -> Client:
    client = Client()
    done = client.post(
        f"/accounts/login/?next={next_path}",
        {"username": user.username, "password": f"pw-{user.username}-123", "next": next_path},
    )
    assert done.status_code == 302, done.content[:500]
    return client


def app_code(secret: str, *, steps_ahead: int = 0) -> str:
    """What an authenticator app holding ``secret`` shows (``steps_ahead`` times 30 s later: a
    code already used in this step is refused as a replay)."""
    totp = TOTP(b32decode(secret.replace(" ", "")))
    totp.time = time.time() + 30 * steps_ahead
    return f"{totp.token():06d}"


def enrol(client: Client, next_path: str = "/") -> tuple[str, list[str]]:
    """Set up the app through the enrolment page: returns the secret and the backup codes."""
    page = client.get(f"{ENROL}?next={next_path}")
    assert page.status_code == 200
    html = page.content.decode()
    secret = re.search(r'<code id="totp-secret">([A-Z2-7 ]+)</code>', html)[1]
    assert 'src="data:image/svg+xml;base64,' in html
    done = client.post(ENROL, {"code": app_code(secret), "next": next_path})
    assert done.status_code == 200, done.content.decode()[:2000]
    codes = re.findall(r"<li><code>([a-z2-7]{8})</code></li>", done.content.decode())
    return secret, codes


def test_an_operator_without_an_app_is_sent_to_set_one_up_and_nowhere_else() -> None:
    otto = operator()
    client = password_sign_in(otto, "/operators/")
    for path in ("/operators/", "/", "/calls/", "/dashboard/rounds/", PAGE, "/admin/"):
        response = client.get(path)
        assert response.status_code == 302, path
        assert response["Location"].startswith(f"{ENROL}?next="), path
    # htmx requests are told where to go instead of swapping the page into a fragment.
    assert client.get("/inbox/", headers={"HX-Request": "true"})["HX-Redirect"].startswith(ENROL)
    # The code page has nothing to ask yet and sends them on to enrolment.
    assert client.get(f"{CODE}?next=/operators/")["Location"] == f"{ENROL}?next=%2Foperators%2F"

    _, codes = enrol(client, "/operators/")
    assert len(codes) == 10 and len(set(codes)) == 10
    assert client.get("/operators/").status_code == 200
    assert TOTPDevice.objects.get(user=otto).confirmed

    # Signing out is always open.
    assert client.post("/accounts/logout/").status_code == 302
    assert "_auth_user_id" not in client.session


def test_signing_in_again_asks_for_a_code_and_refuses_a_wrong_one() -> None:
    otto = operator()
    secret, _ = enrol(password_sign_in(otto))

    client = password_sign_in(otto, "/operators/")
    asked = client.get("/operators/")
    assert asked["Location"] == f"{CODE}?next=%2Foperators%2F"
    page = client.get(asked["Location"])
    assert page.status_code == 200 and b"authenticator" in page.content

    wrong = client.post(CODE, {"code": "000000", "next": "/operators/"})
    assert wrong.status_code == 422
    assert b"That code is not right" in wrong.content
    assert client.get("/operators/").status_code == 302
    # Each wrong code makes the next try wait (django-otp's throttling): even the right code
    # is refused until then.
    throttled = client.post(CODE, {"code": app_code(secret, steps_ahead=1)})
    assert throttled.status_code == 422 and b"Too many wrong codes" in throttled.content
    TOTPDevice.objects.filter(user=otto).update(
        throttling_failure_timestamp=timezone.now() - timedelta(minutes=1)
    )

    session_before = client.session.session_key
    right = client.post(CODE, {"code": app_code(secret, steps_ahead=1), "next": "/operators/"})
    assert right.status_code == 303 and right["Location"] == "/operators/"
    assert client.session.session_key != session_before  # a new key for the raised privilege
    assert client.get("/operators/").status_code == 200


def test_a_code_is_taken_once() -> None:
    otto = operator()
    secret, _ = enrol(password_sign_in(otto))
    code = app_code(secret, steps_ahead=1)
    first = password_sign_in(otto)
    assert first.post(CODE, {"code": code}).status_code == 303
    second = password_sign_in(otto)
    assert second.post(CODE, {"code": code}).status_code == 422


def test_a_backup_code_works_once() -> None:
    alice = admin()
    _, codes = enrol(password_sign_in(alice))
    client = password_sign_in(alice, "/dashboard/rounds/")
    # Typed with spaces or in capitals, as people copy them.
    typed = f"{codes[3][:4].upper()} {codes[3][4:]}"
    assert client.post(CODE, {"code": typed, "next": "/dashboard/rounds/"}).status_code == 303
    assert client.get("/dashboard/rounds/").status_code == 200
    assert StaticToken.objects.filter(device__user=alice).count() == 9

    again = password_sign_in(alice)
    refused = again.post(CODE, {"code": codes[3]})
    assert refused.status_code == 422
    assert again.get("/dashboard/rounds/").status_code == 302


def test_an_ordinary_person_is_not_forced_and_may_turn_it_on_and_off() -> None:
    eve = person("eve")
    client = password_sign_in(eve)
    assert client.get("/calls/").status_code == 200
    page = client.get(PAGE)
    assert b"Two-step sign-in is <strong>off</strong>" in page.content

    _, codes = enrol(client)
    assert len(codes) == 10
    assert b"Two-step sign-in is <strong>on</strong>" in client.get(PAGE).content
    # New backup codes replace the old ones.
    fresh = client.post(f"{PAGE}backup-codes/")
    new_codes = re.findall(r"<li><code>([a-z2-7]{8})</code></li>", fresh.content.decode())
    assert len(new_codes) == 10 and not set(new_codes) & set(codes)

    # Now her sign-ins ask for a code too.
    later = password_sign_in(eve, "/calls/")
    assert later.get("/calls/")["Location"] == f"{CODE}?next=%2Fcalls%2F"
    assert later.post(CODE, {"code": new_codes[0]}).status_code == 303
    assert later.post(f"{PAGE}turn-off/").status_code == 303
    assert not TOTPDevice.objects.filter(user=eve).exists()
    assert password_sign_in(eve).get("/calls/").status_code == 200


def test_admins_and_operators_cannot_turn_it_off() -> None:
    otto = operator()
    client = password_sign_in(otto)
    enrol(client)
    refused = client.post(f"{PAGE}turn-off/", follow=True)
    assert b"must keep two-step sign-in" in refused.content
    assert TOTPDevice.objects.filter(user=otto, confirmed=True).exists()


def test_the_django_admin_needs_a_verified_session() -> None:
    root = get_user_model().objects.create_superuser("root", password="pw-root-123")
    client = password_sign_in(root, "/admin/")
    assert client.get("/admin/")["Location"].startswith(ENROL)
    enrol(client)
    assert client.get("/admin/").status_code == 200

    again = password_sign_in(root, "/admin/")
    assert again.get("/admin/auth/user/")["Location"].startswith(CODE)
    # Staff without a role count too: they reach the admin.
    staff = person("stan")
    staff.is_staff = True
    staff.save()
    assert password_sign_in(staff).get("/admin/")["Location"].startswith(ENROL)


def test_api_tokens_are_not_sessions_and_need_no_second_factor() -> None:
    otto = operator()
    _, plain = ApiToken.issue(otto, "pipeline")
    response = Client().get("/api/v1/rounds", headers={"Authorization": f"Bearer {plain}"})
    assert response.status_code == 200


def test_a_reset_sends_the_person_back_to_enrolment() -> None:
    otto = operator()
    client = password_sign_in(otto)
    enrol(client)
    assert client.get("/operators/").status_code == 200

    out = StringIO()
    call_command("reset_two_step", "otto", stdout=out)
    assert "otto: removed 2 device(s); must set it up again" in out.getvalue()
    # The verified session no longer counts: its device is gone.
    assert client.get("/operators/")["Location"].startswith(ENROL)


def test_the_admin_action_resets_two_step_sign_in() -> None:
    otto = operator()
    enrol(password_sign_in(otto))
    root = get_user_model().objects.create_superuser("root", password="pw-root-123")
    client = Client()
    client.force_login(root)  # verified (tests/conftest.py)
    done = client.post(
        "/admin/auth/user/",
        {"action": "reset_two_step", "_selected_action": [otto.pk]},
        follow=True,
    )
    assert b"Two-step sign-in reset for otto" in done.content
    assert not TOTPDevice.objects.filter(user=otto).exists()


def test_the_harness_force_login_is_verified_only_when_asked() -> None:
    otto = operator()
    verified, bare = Client(), Client()
    verified.force_login(otto)
    bare.force_login(otto, verified=False)
    assert verified.get("/operators/").status_code == 200
    assert bare.get("/operators/")["Location"].startswith(CODE)
