"""Single sign-on against a real OpenID Connect provider on loopback (tests/peers/oidc_provider.py).

Django's test client goes to ``/oidc/authenticate/``, follows the redirect across to the
provider with httpx (which auto-approves its person and sends the browser back with a code),
and brings the code back to ``/oidc/callback/``; the app then talks to the provider's token,
JWKS and userinfo endpoints over HTTP, as in production.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.test import Client
from django_otp.plugins.otp_totp.models import TOTPDevice

from mrtrweb import env
from mrtrweb.accounts.models import OidcIdentity, SingleSignOnDevice
from mrtrweb.accounts.oidc import OidcBackend
from mrtrweb.people import roles
from tests.peers.oidc_provider import CLIENT_ID, CLIENT_SECRET, OidcProvider
from tests.support.factories import wide

pytestmark = pytest.mark.django_db

CALLBACK = "http://testserver/oidc/callback/"
GROUP_MAP = "idp-admins=Admins,idp-ops=Operators,idp-approvers=Approvers"


@pytest.fixture
def provider() -> Iterator[OidcProvider]:
    running = OidcProvider(redirect_uris=[CALLBACK]).start()
    try:
        yield running
    finally:
        running.stop()


def configure(settings: Any, **environ: str) -> None:
    """The settings mrtrweb/settings.py makes of these environment variables."""
    for name, value in env.oidc(environ).items():
        setattr(settings, name, value)


@pytest.fixture
def sso(settings: Any, provider: OidcProvider) -> OidcProvider:
    configure(
        settings,
        OIDC_RP_CLIENT_ID=CLIENT_ID,
        OIDC_RP_CLIENT_SECRET=CLIENT_SECRET,
        OIDC_OP_DISCOVERY_URL=provider.discovery_url,
        MRTRWEB_OIDC_NAME="Example SSO",
        MRTRWEB_OIDC_GROUP_MAP=GROUP_MAP,
    )
    return provider


def sso_sign_in(client: Client, provider: OidcProvider, next_path: str = "/") -> Any:
    """The round trip a browser makes; returns the app's answer to the callback."""
    start = client.get(f"/oidc/authenticate/?next={next_path}")
    assert start.status_code == 302, start.content[:500]
    assert start["Location"].startswith(f"{provider.issuer}/authorize?")
    approved = httpx.get(start["Location"], follow_redirects=False, timeout=10)
    assert approved.status_code == 302, approved.text
    back = urlsplit(approved.headers["location"])
    assert f"{back.scheme}://{back.netloc}{back.path}" == CALLBACK
    return client.get(f"{back.path}?{back.query}")


def signed_in_as(client: Client) -> Any:
    user_id = client.session.get("_auth_user_id")
    return get_user_model().objects.get(pk=user_id) if user_id else None


def names(user: Any) -> set[str]:
    return set(user.groups.values_list("name", flat=True))


def test_off_when_not_configured(settings: Any) -> None:
    assert settings.MRTRWEB_OIDC_ENABLED is False
    page = Client().get("/accounts/login/")
    assert b"Sign in with" not in page.content
    assert Client().get("/oidc/authenticate/").status_code == 404
    assert Client().get("/oidc/callback/?code=x&state=y").status_code == 404


def test_the_login_page_offers_the_provider_when_configured(sso: OidcProvider) -> None:
    page = Client().get("/accounts/login/?next=/calls/")
    assert b'href="/oidc/authenticate/?next=%2Fcalls%2F">Sign in with Example SSO</a>' in (
        page.content
    )
    # The local form is still there.
    assert b'name="password"' in page.content


def test_a_new_person_gets_an_account_from_the_claims(sso: OidcProvider) -> None:
    sso.person = {
        "sub": "idp-0001",
        "preferred_username": "ida",
        "email": "ida@example.org",
        "given_name": "Ida",
        "family_name": "Lovelace",
        "groups": ["idp-approvers", "idp-unmapped"],
        "amr": ["pwd"],
    }
    client = Client()
    done = sso_sign_in(client, sso, "/calls/")
    assert done.status_code == 302 and done["Location"] == "/calls/"
    ida = signed_in_as(client)
    assert (ida.username, ida.email, ida.first_name, ida.last_name) == (
        "ida",
        "ida@example.org",
        "Ida",
        "Lovelace",
    )
    assert not ida.has_usable_password() and not ida.is_staff and not ida.is_superuser
    assert names(ida) == {"Approvers"}
    identity = OidcIdentity.objects.get(user=ida)
    assert (identity.issuer, identity.subject) == (sso.issuer, "idp-0001")
    # An ordinary person: no second factor asked.
    assert client.get("/calls/").status_code == 200
    # The flow used PKCE and a nonce.
    asked = next(entry for entry in sso.seen if entry["endpoint"] == "authorize")
    assert asked["code_challenge_method"] == "S256" and asked["nonce"]


def test_groups_follow_the_claim_and_local_groups_stay(sso: OidcProvider) -> None:
    sso.person = {"sub": "idp-0002", "preferred_username": "gus", "groups": ["idp-admins"]}
    client = Client()
    sso_sign_in(client, sso)
    gus = signed_in_as(client)
    assert names(gus) == {"Admins"}
    gus.groups.add(Group.objects.create(name="Local team"))

    sso.person = {"sub": "idp-0002", "preferred_username": "gus", "groups": ["idp-ops"]}
    sso_sign_in(Client(), sso)
    assert names(gus) == {"Operators", "Local team"}

    sso.person = {"sub": "idp-0002", "preferred_username": "gus"}  # no groups claim at all
    sso_sign_in(Client(), sso)
    assert names(gus) == {"Local team"}


def test_the_account_is_found_by_subject_never_by_email_or_name(sso: OidcProvider) -> None:
    local = get_user_model().objects.create_user(
        "ida", email="ida@example.org", password="pw-ida-123"
    )
    sso.person = {"sub": "idp-0003", "preferred_username": "ida", "email": "ida@example.org"}
    first = Client()
    sso_sign_in(first, sso)
    ida = signed_in_as(first)
    assert ida.pk != local.pk and ida.username == "ida-2"

    # New address and name at the provider: the same account, brought up to date.
    sso.person = {"sub": "idp-0003", "preferred_username": "ida.l", "email": "ida@new.example"}
    again = Client()
    sso_sign_in(again, sso)
    assert signed_in_as(again).pk == ida.pk
    ida.refresh_from_db()
    assert ida.email == "ida@new.example" and ida.username == "ida-2"
    local.refresh_from_db()
    assert local.email == "ida@example.org"


@pytest.mark.parametrize(
    ("preferred", "given"), [(wide("IDA"), "IDA-2"), (wide("ida"), "ida-2"), ("Ida", "Ida-2")]
)
def test_a_new_account_never_takes_a_name_that_reads_as_another(
    sso: OidcProvider, preferred: str, given: str
) -> None:
    local = get_user_model().objects.create_user("ida", password="pw-ida-123")
    sso.person = {"sub": "idp-0011", "preferred_username": preferred}
    client = Client()
    done = sso_sign_in(client, sso)
    assert done.status_code == 302
    person = signed_in_as(client)
    assert person.pk != local.pk and person.username == given


@pytest.mark.parametrize(
    "tamper", ["signature", "expired", "audience", "issuer", "nonce", "foreign_key"]
)
def test_a_wrong_id_token_is_refused(sso: OidcProvider, tamper: str) -> None:
    sso.person = {"sub": "idp-0004", "preferred_username": "mal", "groups": ["idp-admins"]}
    sso.tamper = tamper
    client = Client()
    done = sso_sign_in(client, sso)
    assert done.status_code == 302 and done["Location"] == "/accounts/login/"
    assert signed_in_as(client) is None
    assert not get_user_model().objects.filter(username="mal").exists()
    page = client.get("/accounts/login/")
    assert b"Signing in with Example SSO did not work" in page.content


def test_a_callback_is_taken_once(sso: OidcProvider) -> None:
    client = Client()
    start = client.get("/oidc/authenticate/")
    approved = httpx.get(start["Location"], follow_redirects=False, timeout=10)
    back = urlsplit(approved.headers["location"])
    assert client.get(f"{back.path}?{back.query}")["Location"] == "/"
    client.logout()
    replayed = client.get(f"{back.path}?{back.query}")
    assert replayed["Location"] == "/accounts/login/"
    assert signed_in_as(client) is None
    # A state this browser never started is refused too.
    stranger = Client()
    state = parse_qs(back.query)["state"][0]
    assert stranger.get(f"/oidc/callback/?code=x&state={state}")["Location"] == "/accounts/login/"


def test_an_unreachable_provider_is_a_message_not_an_error(settings: Any) -> None:
    configure(
        settings,
        OIDC_RP_CLIENT_ID=CLIENT_ID,
        OIDC_RP_CLIENT_SECRET=CLIENT_SECRET,
        OIDC_OP_ISSUER="http://127.0.0.1:9",
    )
    client = Client()
    done = client.get("/oidc/authenticate/")
    assert done.status_code == 302 and done["Location"] == "/accounts/login/"
    assert b"did not work" in client.get("/accounts/login/").content


def test_an_operator_without_the_providers_mfa_still_passes_a_code_here(
    sso: OidcProvider,
) -> None:
    sso.person = {"sub": "idp-0005", "preferred_username": "ola", "groups": ["idp-ops"]}
    sso.person["amr"] = ["pwd"]
    client = Client()
    sso_sign_in(client, sso, "/operators/")
    assert client.get("/operators/")["Location"].startswith("/account/two-step/set-up/")


def test_the_providers_mfa_counts_as_the_second_factor(sso: OidcProvider) -> None:
    sso.person = {"sub": "idp-0006", "preferred_username": "oli", "groups": ["idp-ops"]}
    sso.person["amr"] = ["pwd", "mfa"]
    client = Client()
    sso_sign_in(client, sso, "/operators/")
    assert client.get("/operators/").status_code == 200
    oli = signed_in_as(client)
    assert SingleSignOnDevice.objects.filter(user=oli).count() == 1
    # It takes no code: a password sign-in of the same account (were it to have one) is not
    # verified by it.
    assert not TOTPDevice.objects.filter(user=oli).exists()


def test_trusting_the_providers_mfa_can_be_turned_off(settings: Any, sso: OidcProvider) -> None:
    settings.MRTRWEB_OIDC_TRUST_MFA = False
    sso.person = {"sub": "idp-0007", "preferred_username": "ona", "groups": ["idp-ops"]}
    sso.person["amr"] = ["mfa"]
    client = Client()
    sso_sign_in(client, sso, "/operators/")
    assert client.get("/operators/")["Location"].startswith("/account/two-step/set-up/")


def test_a_person_with_an_app_is_asked_for_its_code_after_single_sign_on(
    sso: OidcProvider,
) -> None:
    sso.person = {"sub": "idp-0008", "preferred_username": "abe", "groups": ["idp-admins"]}
    first = Client()
    sso_sign_in(first, sso)
    abe = signed_in_as(first)
    TOTPDevice.objects.create(user=abe, name="Authenticator app", confirmed=True)
    later = Client()
    sso_sign_in(later, sso, "/dashboard/rounds/")
    assert later.get("/dashboard/rounds/")["Location"].startswith("/account/two-step/code/")


def test_without_account_creation_strangers_are_refused(settings: Any, sso: OidcProvider) -> None:
    settings.MRTRWEB_OIDC_CREATE_USERS = False
    sso.person = {"sub": "idp-0009", "preferred_username": "sam"}
    client = Client()
    assert sso_sign_in(client, sso)["Location"] == "/accounts/login/"
    assert not get_user_model().objects.filter(username="sam").exists()


def test_a_person_deactivated_after_single_sign_on_is_signed_out(sso: OidcProvider) -> None:
    """Their session names the single sign-on backend, whose reading of the person is the
    app's: active people only, as for a password's sign-in (mozilla-django-oidc's own reads
    anyone, so such a person kept every page until their session ran out)."""
    sso.person = {"sub": "idp-0010", "preferred_username": "dee"}
    client = Client()
    assert sso_sign_in(client, sso, "/calls/")["Location"] == "/calls/"
    assert client.session["_auth_user_backend"] == "mrtrweb.accounts.oidc.OidcBackend"
    assert client.get("/inbox/").status_code == 200
    dee = signed_in_as(client)
    dee.is_active = False
    dee.save()
    page = client.get("/inbox/")
    assert page.status_code == 302 and page["Location"].startswith("/accounts/login/")
    # Read as the app reads a signed-in person: with their permissions, in one statement.
    dee.is_active = True
    dee.save()
    person = OidcBackend().get_user(dee.pk)
    assert person == dee and hasattr(person, roles.KEPT)
