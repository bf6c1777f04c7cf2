"""Failed sign-ins are limited per account and per address (django-axes, settings ``AXES_*``).

Everything goes through the real sign-in pages with Django's test client; an address is the
request's ``REMOTE_ADDR`` (behind the proxy, uvicorn puts the forwarded client there).
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from axes.models import AccessAttempt
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import AsyncClient, Client
from django.urls import reverse

from mrtrweb.api.models import ApiToken

pytestmark = pytest.mark.django_db

HERE = "198.51.100.7"
ELSEWHERE = "203.0.113.9"
LIMIT = 5
LOCKOUT_SECONDS = 15 * 60


def account(name: str, *, staff: bool = False) -> Any:
    maker = get_user_model().objects.create_superuser if staff else None
    if maker is not None:
        return maker(name, email="", password=f"pw-{name}-123")
    return get_user_model().objects.create_user(name, password=f"pw-{name}-123")


def sign_in(username: str, password: str, *, address: str = HERE, path: str = "") -> Any:
    """One try on the sign-in page from ``address``, in a fresh browser."""
    client = Client(REMOTE_ADDR=address)
    return client.post(
        path or reverse("login"), {"username": username, "password": password, "next": "/"}
    )


def right(username: str, **where: Any) -> Any:
    return sign_in(username, f"pw-{username}-123", **where)


def wrong(username: str, times: int = 1, **where: Any) -> Any:
    for _ in range(times):
        response = sign_in(username, "not-the-password", **where)
    return response


def is_signed_in(response: Any) -> bool:
    return response.status_code == 302 and response["Location"] == "/"


def is_paused(response: Any) -> bool:
    return response.status_code == 429 and b"Signing in is paused" in response.content


def main_text(response: Any) -> str:
    """The page's <main>, with the clock time taken out (the two pages may straddle a minute)."""
    html = response.content.decode()
    main = html[html.index("<main") : html.index("</main>")]
    return re.sub(r"\d\d:\d\d", "HH:MM", main)


def test_the_fifth_wrong_password_pauses_signing_in_even_with_the_right_one() -> None:
    account("ann")

    fourth = wrong("ann", LIMIT - 1)
    assert fourth.status_code == 200  # the sign-in form again, with its error
    assert b"That username and password do not match an account here" in fourth.content

    fifth = wrong("ann")
    assert is_paused(fifth)
    # It says when, in words and for machines.
    assert LOCKOUT_SECONDS - 60 < int(fifth["Retry-After"]) <= LOCKOUT_SECONDS
    assert b"in about 15 minutes" in fifth.content

    assert is_paused(right("ann"))


def test_the_page_is_the_same_whether_or_not_the_account_exists() -> None:
    account("ann")
    real = wrong("ann", LIMIT)
    made_up = wrong("nobody-by-this-name", LIMIT, address=ELSEWHERE)

    assert is_paused(real) and is_paused(made_up)
    assert main_text(real) == main_text(made_up)
    assert "ann" not in main_text(real)


def test_the_address_is_paused_for_other_accounts_and_the_account_from_other_addresses() -> None:
    account("ann")
    account("bob")
    wrong("ann", LIMIT)

    # Per address: five failures from here pause every account here.
    assert is_paused(right("bob"))
    # Per account: five failures on ann pause ann everywhere.
    assert is_paused(right("ann", address=ELSEWHERE))
    # Others elsewhere are untouched.
    assert is_signed_in(right("bob", address=ELSEWHERE))


def test_failures_spread_over_accounts_add_up_per_address() -> None:
    for name in ("ann", "bob", "cy"):
        account(name)
    wrong("ann", 2)
    wrong("bob", 2)
    assert is_paused(wrong("cy"))
    assert is_paused(right("cy"))


def test_tries_while_paused_are_not_checked_and_do_not_extend_the_pause() -> None:
    account("ann")
    first = wrong("ann", LIMIT)
    AccessAttempt.objects.update(attempt_time=AccessAttempt.objects.get().attempt_time - _min(5))

    later = wrong("ann", 3)

    assert is_paused(later)
    assert AccessAttempt.objects.get().failures_since_start == LIMIT
    assert int(later["Retry-After"]) <= int(first["Retry-After"]) - 5 * 60


def test_the_pause_ends_after_the_cool_off() -> None:
    account("ann")
    wrong("ann", LIMIT)
    AccessAttempt.objects.update(attempt_time=AccessAttempt.objects.get().attempt_time - _min(16))

    assert is_signed_in(right("ann"))


def test_a_successful_sign_in_forgives_that_accounts_failures() -> None:
    account("ann")
    wrong("ann", LIMIT - 1)
    assert is_signed_in(right("ann"))

    assert not AccessAttempt.objects.exists()
    assert wrong("ann", LIMIT - 1).status_code == 200


def test_a_successful_sign_in_does_not_forgive_other_accounts_failures_from_its_address() -> None:
    # Otherwise one working password would let its owner guess everyone else's, four at a time.
    account("ann")
    account("bob")
    wrong("bob", LIMIT - 1)
    assert is_signed_in(right("ann"))

    assert is_paused(wrong("bob"))


def test_axes_reset_username_lifts_the_pause() -> None:
    account("ann")
    wrong("ann", LIMIT)
    assert is_paused(right("ann", address=ELSEWHERE))

    call_command("axes_reset_username", "ann", verbosity=0)

    # All the failures here were ann's, so the address is free again too.
    assert is_signed_in(right("ann"))


def test_an_admin_lifts_the_pause_by_deleting_the_attempt_in_django_admin() -> None:
    account("ann")
    wrong("ann", LIMIT)
    attempt = AccessAttempt.objects.get()
    admin = Client()
    admin.force_login(account("root", staff=True))

    listing = admin.get(reverse("admin:axes_accessattempt_changelist"))
    assert listing.status_code == 200 and b"ann" in listing.content
    deleted = admin.post(
        reverse("admin:axes_accessattempt_delete", args=[attempt.pk]), {"post": "yes"}
    )

    assert deleted.status_code == 302
    assert is_signed_in(right("ann"))


def test_the_admin_sign_in_page_is_limited_too() -> None:
    account("root", staff=True)
    path = reverse("admin:login")

    assert is_paused(wrong("root", LIMIT, path=path))
    assert is_paused(right("root", path=path))


def test_api_tokens_work_from_a_paused_address() -> None:
    ann = account("ann")
    _, token = ApiToken.issue(ann, "ci")
    wrong("ann", LIMIT)
    assert is_paused(right("ann"))

    response = Client(REMOTE_ADDR=HERE).get(
        "/api/v1/servers", headers={"Authorization": f"Bearer {token}"}
    )

    assert response.status_code == 200, response.content


def _min(minutes: int) -> timedelta:
    return timedelta(minutes=minutes)


@pytest.mark.django_db(transaction=True)
async def test_the_lockout_page_is_served_under_asgi_too() -> None:
    # Served by uvicorn, axes' middleware runs its async path, which hands the lockout page
    # its arguments differently.
    await sync_to_async(account)("ann")
    client = AsyncClient(REMOTE_ADDR=HERE)
    for _ in range(LIMIT):
        response = await client.post(
            reverse("login"), {"username": "ann", "password": "not-the-password"}
        )

    assert is_paused(response)
    assert LOCKOUT_SECONDS - 60 < int(response["Retry-After"]) <= LOCKOUT_SECONDS
