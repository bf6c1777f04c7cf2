"""Signing in, and setting a new password by email: Django's views with our forms, pages and
email, through the test client (emails land in ``django.core.mail.outbox``)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.sessions.models import Session
from django.core import mail
from django.core.cache import cache
from django.test import Client
from django.urls import reverse

pytestmark = pytest.mark.django_db

BASE_URL = "https://mrtr.example.org:8443"


@pytest.fixture(autouse=True)
def _site(settings: Any) -> None:
    settings.MRTRWEB_BASE_URL = BASE_URL + "/"
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    cache.clear()  # the count of reset emails per address (mrtrweb/accounts/signin.py)


def ada() -> Any:
    return get_user_model().objects.create_user(
        "ada", email="ada@example.org", password="pw-ada-old-123"
    )


def reset_link(message: mail.EmailMessage) -> str:
    [link] = re.findall(r"https?://\S+", message.body)
    return link


def test_the_sign_in_page_has_the_sites_look_and_a_reset_link() -> None:
    page = Client().get(reverse("login")).content.decode()

    assert 'aria-label="Main"' in page and 'class="auth-card"' in page
    assert '<label for="id_username">Username</label>' in page
    assert f'href="{reverse("password_reset")}"' in page
    assert "Sign in with" not in page  # no single sign-on configured


def test_a_wrong_password_is_said_plainly_and_the_form_kept() -> None:
    ada()
    response = Client().post(reverse("login"), {"username": "ada", "password": "nope"})

    assert response.status_code == 200
    page = response.content.decode()
    assert "That username and password do not match an account here." in page
    assert 'role="alert"' in page
    assert 'value="ada"' in page


def test_the_whole_reset_round_trip(client: Client) -> None:
    user = ada()

    response = client.post(reverse("password_reset"), {"email": "ada@example.org"})
    assert response.status_code == 302
    assert response["Location"] == reverse("password_reset_done")
    assert "Check your email" in client.get(response["Location"]).content.decode()

    [message] = mail.outbox
    assert message.to == ["ada@example.org"]
    assert message.subject == "Set a new password for mrtrweb"
    link = reset_link(message)
    # Built on MRTRWEB_BASE_URL, not on the request's host ("testserver").
    assert link.startswith(BASE_URL + "/accounts/reset/")
    assert "testserver" not in message.body

    # The link's page moves the token into the session and shows the form.
    path = link.removeprefix(BASE_URL)
    form_page = client.get(path, follow=True)
    assert "Set a new password" in form_page.content.decode()
    set_password_path = form_page.redirect_chain[-1][0]

    done = client.post(
        set_password_path,
        {"new_password1": "a-new-long-password-42", "new_password2": "a-new-long-password-42"},
    )
    assert done.status_code == 302 and done["Location"] == reverse("password_reset_complete")
    assert "Your password is set" in client.get(done["Location"]).content.decode()

    user.refresh_from_db()
    assert user.check_password("a-new-long-password-42")
    signed_in = Client().post(
        reverse("login"), {"username": "ada", "password": "a-new-long-password-42"}
    )
    assert signed_in.status_code == 302

    # The link works once.
    again = Client().get(path, follow=True).content.decode()
    assert "This link does not work any more" in again
    assert 'name="new_password1"' not in again


def test_an_unknown_address_reveals_nothing(client: Client) -> None:
    ada()

    known = client.post(reverse("password_reset"), {"email": "ada@example.org"})
    unknown = client.post(reverse("password_reset"), {"email": "nobody@example.org"})

    assert (known.status_code, known["Location"]) == (unknown.status_code, unknown["Location"])
    assert [m.to for m in mail.outbox] == [["ada@example.org"]]


def test_no_link_for_an_account_switched_off_or_without_a_password(client: Client) -> None:
    user = ada()
    user.is_active = False
    user.save()
    get_user_model().objects.create_user("sso", email="sso@example.org")  # unusable password

    for address in ("ada@example.org", "sso@example.org"):
        response = client.post(reverse("password_reset"), {"email": address})
        assert response["Location"] == reverse("password_reset_done")
    assert mail.outbox == []


def test_a_forged_link_shows_the_way_to_a_new_one(client: Client) -> None:
    ada()
    page = client.get("/accounts/reset/MQ/abc-forged/", follow=True).content.decode()

    assert "This link does not work any more" in page
    assert f'href="{reverse("password_reset")}"' in page


def test_the_lockout_page_offers_the_reset(settings: Any) -> None:
    ada()
    client = Client(REMOTE_ADDR="198.51.100.8")
    for _ in range(settings.AXES_FAILURE_LIMIT):
        response = client.post(reverse("login"), {"username": "ada", "password": "nope"})

    page = response.content.decode()
    assert "Signing in is paused" in page
    assert f'href="{reverse("password_reset")}"' in page


def test_changing_the_password_on_the_sites_own_page() -> None:
    user = ada()
    client = Client()
    client.force_login(user)

    page = client.get(reverse("password_change")).content.decode()
    assert 'aria-label="Main"' in page and "Change your password" in page
    response = client.post(
        reverse("password_change"),
        {
            "old_password": "pw-ada-old-123",
            "new_password1": "another-long-password-7",
            "new_password2": "another-long-password-7",
        },
    )
    assert response["Location"] == reverse("password_change_done")
    user.refresh_from_db()
    assert user.check_password("another-long-password-7")


def test_one_address_gets_a_few_links_an_hour_not_a_flood() -> None:
    ada()
    for _ in range(6):
        response = Client().post(reverse("password_reset"), {"email": "ADA@example.org "})
        assert response["Location"] == reverse("password_reset_done")

    assert len(mail.outbox) == 3


def test_a_reset_link_used_while_signed_in_as_that_person_signs_that_browser_out_too(
    client: Client,
) -> None:
    user = ada()
    client.force_login(user)
    elsewhere = Client()
    elsewhere.force_login(user)
    hers = [client.session.session_key, elsewhere.session.session_key]
    client.post(reverse("password_reset"), {"email": "ada@example.org"})
    [message] = mail.outbox
    form_page = client.get(reset_link(message).removeprefix(BASE_URL), follow=True)
    done = client.post(
        form_page.redirect_chain[-1][0],
        {"new_password1": "a-new-long-password-42", "new_password2": "a-new-long-password-42"},
    )
    assert done.status_code == 302 and done["Location"] == reverse("password_reset_complete")
    # Every session of hers ends now (not at its next request), this browser's included.
    assert not Session.objects.filter(session_key__in=hers).exists()
    for browser in (client, elsewhere):
        assert browser.get(reverse("password_change"))["Location"].startswith(reverse("login"))
