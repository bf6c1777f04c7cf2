"""Admins manage people and groups on the site's own pages: invite by email (a link that sets
a password, once), roles, groups, switching accounts off; guard rails against locking
themselves out."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core import mail
from django.test import Client
from django.urls import reverse

from mrtrweb.people.roles import ADMINS, END_USERS, OPERATORS, is_admin, is_operator
from tests.dashboard.support import client_for, make_admin, make_end_user, text
from tests.support.factories import wide

pytestmark = pytest.mark.django_db

User = get_user_model()
BASE = "https://mrtr.example.org"


@pytest.fixture(autouse=True)
def _mail(settings: Any) -> None:
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    settings.MRTRWEB_BASE_URL = BASE


@pytest.fixture
def root() -> Any:
    return make_admin("root")


@pytest.fixture
def web(root: Any) -> Client:
    return client_for(root)


def link_in(message: Any) -> str:
    [link] = re.findall(r"https?://\S+/accounts/reset/\S+", message.body)
    return link


def test_only_admins_get_in() -> None:
    eve = client_for(make_end_user("eve"))
    for name in ("people", "invite", "groups"):
        response = eve.get(reverse(f"dashboard:{name}"))
        assert response.status_code == 403
        assert "The dashboard is for admins." in text(response)
    assert Client().get(reverse("dashboard:people")).status_code == 302


def test_the_list_shows_roles_groups_and_state(web: Client) -> None:
    eve = make_end_user("eve<script>")
    eve.groups.add(Group.objects.create(name="Approvers"))
    make_end_user("ann").groups.add(Group.objects.get(name=OPERATORS))
    User.objects.filter(username="ann").update(is_active=False)

    page = text(web.get(reverse("dashboard:people")))

    assert "eve&lt;script&gt;" in page and "eve<script>" not in page
    assert "Approvers" in page and "switched off" in page
    assert "End users, Operators" in page
    found = text(web.get(reverse("dashboard:people"), {"q": "ann"}))
    assert "ann" in found and "eve&lt;" not in found


def test_an_invitation_sets_a_password_once(web: Client, root: Any) -> None:
    response = web.post(
        reverse("dashboard:invite"),
        {"username": "nina", "email": "nina@example.org", "roles": [END_USERS, OPERATORS]},
    )

    nina = User.objects.get(username="nina")
    assert response.status_code == 303
    assert response["Location"] == reverse("dashboard:person", kwargs={"pk": nina.pk})
    assert not nina.has_usable_password()
    assert is_operator(nina) and not is_admin(nina)
    [message] = mail.outbox
    assert message.to == ["nina@example.org"] and message.subject == "You are invited to mrtrweb"
    assert "root invited you" in message.body
    link = link_in(message)
    assert link.startswith(BASE + "/accounts/reset/")

    browser = Client()
    form = browser.get(link.removeprefix(BASE), follow=True)
    assert "Set a new password" in text(form)
    done = browser.post(
        form.redirect_chain[-1][0],
        {"new_password1": "nina-chose-this-42", "new_password2": "nina-chose-this-42"},
    )
    assert done["Location"] == reverse("password_reset_complete")
    nina.refresh_from_db()
    assert nina.check_password("nina-chose-this-42")
    again = Client().get(link.removeprefix(BASE), follow=True)
    assert "This link does not work any more" in text(again)


def test_an_invitation_is_checked(web: Client) -> None:
    make_end_user("eve")
    response = web.post(reverse("dashboard:invite"), {"username": "EVE", "email": "not an address"})
    page = text(response)
    assert response.status_code == 200
    assert "Someone has this username already." in page
    assert "Enter a valid email address." in page
    assert mail.outbox == []


@pytest.mark.parametrize(
    ("existing", "typed"),
    [
        ("bob", wide("BOB")),  # fullwidth capitals: stored as "BOB"
        ("newbie", wide("newbie")),  # fullwidth: stored as "newbie" itself
        ("éva", "ÉVA"),  # case beyond ASCII
        ("strasse", "STRASSE"),
    ],
)
def test_a_username_that_reads_as_someone_elses_is_refused(
    web: Client, existing: str, typed: str
) -> None:
    make_end_user(existing)
    response = web.post(reverse("dashboard:invite"), {"username": typed, "email": "x@example.org"})
    assert response.status_code == 200
    page = text(response)
    assert "Someone has this username already." in page
    assert f"It is taken by {existing}" in page
    assert User.objects.filter(email="x@example.org").count() == 0
    assert mail.outbox == []


def test_an_invited_username_is_stored_as_it_reads(web: Client) -> None:
    response = web.post(
        reverse("dashboard:invite"), {"username": wide(" zoe "), "email": "z@ex.org"}
    )
    assert response.status_code == 303
    assert User.objects.get(email="z@ex.org").username == "zoe"


def test_roles_and_groups_are_set_on_the_persons_page(web: Client) -> None:
    eve = make_end_user("eve")
    approvers = Group.objects.create(name="Approvers")
    page = reverse("dashboard:person", kwargs={"pk": eve.pk})

    response = web.post(
        page, {"email": "eve@new.example", "roles": [ADMINS], "groups": [approvers.pk]}
    )

    assert response.status_code == 303
    eve = User.objects.get(pk=eve.pk)
    assert eve.email == "eve@new.example"
    assert sorted(g.name for g in eve.groups.all()) == [ADMINS, "Approvers"]
    assert is_admin(eve)
    shown = text(web.get(page))
    assert 'value="Approvers"' not in shown  # groups are chosen by id
    assert f'value="{approvers.pk}" id=' in shown and "checked" in shown


def test_an_admin_cannot_demote_or_switch_off_themselves(web: Client, root: Any) -> None:
    page = reverse("dashboard:person", kwargs={"pk": root.pk})

    refused = web.post(page, {"email": "", "roles": [END_USERS]})
    assert "You cannot take the Admins role from yourself." in text(refused)
    assert is_admin(User.objects.get(pk=root.pk))

    off = web.post(reverse("dashboard:person_active", kwargs={"pk": root.pk}), follow=True)
    assert "You cannot switch off your own account." in text(off)
    assert User.objects.get(pk=root.pk).is_active

    admins = Group.objects.get(name=ADMINS)
    web.post(reverse("dashboard:group", kwargs={"pk": admins.pk}), {"remove": root.pk})
    assert is_admin(User.objects.get(pk=root.pk))


def test_switching_off_asks_first_and_stops_sign_in(web: Client) -> None:
    eve = make_end_user("eve")
    url = reverse("dashboard:person_active", kwargs={"pk": eve.pk})

    asked = web.post(url)
    assert "Switch off eve?" in text(asked) and 'name="confirmed" value="1"' in text(asked)
    assert User.objects.get(pk=eve.pk).is_active

    web.post(url, {"confirmed": "1"})
    assert not User.objects.get(pk=eve.pk).is_active
    refused = Client().post(reverse("login"), {"username": "eve", "password": "pw-eve-123"})
    assert refused.status_code == 200  # the form again

    web.post(url, {"active": "1"})
    assert User.objects.get(pk=eve.pk).is_active


def test_only_a_superuser_changes_a_superuser(web: Client) -> None:
    boss = User.objects.create_superuser("boss", email="b@example.org", password="pw-boss-123")

    response = web.post(
        reverse("dashboard:person_active", kwargs={"pk": boss.pk}), {"confirmed": "1"}
    )

    assert response.status_code == 403
    assert "Only a superuser changes a superuser" in text(response)
    assert User.objects.get(pk=boss.pk).is_active


def test_groups_are_made_and_filled(web: Client) -> None:
    eve = make_end_user("eve")

    made = web.post(reverse("dashboard:groups"), {"name": "  Release   managers "})
    group = Group.objects.get(name="Release managers")
    assert made["Location"] == reverse("dashboard:group", kwargs={"pk": group.pk})
    assert "exists already" in text(
        web.post(reverse("dashboard:groups"), {"name": "release managers"})
    )

    page = reverse("dashboard:group", kwargs={"pk": group.pk})
    web.post(page, {"username": "eve"})
    assert list(group.user_set.all()) == [eve]
    assert "There is no account with this username." in text(web.post(page, {"username": "nobody"}))
    listed = text(web.get(reverse("dashboard:groups")))
    assert "Release managers" in listed

    web.post(page, {"remove": eve.pk})
    assert not group.user_set.exists()


def test_a_new_link_for_someone_with_a_password(web: Client) -> None:
    eve = make_end_user("eve")

    web.post(reverse("dashboard:person_link", kwargs={"pk": eve.pk}))

    [message] = mail.outbox
    assert message.subject == "Set a new password for mrtrweb"
    assert message.to == [eve.email]
    assert link_in(message).startswith(BASE)


def test_every_form_needs_its_csrf_token(root: Any) -> None:
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(root)
    assert (
        strict.post(
            reverse("dashboard:invite"), {"username": "x", "email": "x@example.org"}
        ).status_code
        == 403
    )
    assert strict.post(reverse("dashboard:groups"), {"name": "x"}).status_code == 403
    assert not User.objects.filter(username="x").exists()
