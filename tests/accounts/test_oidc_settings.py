"""Single sign-on's settings from the environment (mrtrweb/env.py: oidc, oidc_group_map)."""

from __future__ import annotations

import pytest

from mrtrweb.env import EnvError, oidc, oidc_group_map

BASE = {"OIDC_RP_CLIENT_ID": "mrtrweb", "OIDC_RP_CLIENT_SECRET": "s3cret"}
ENDPOINTS = {
    "OIDC_OP_AUTHORIZATION_ENDPOINT": "https://idp.example/auth",
    "OIDC_OP_TOKEN_ENDPOINT": "https://idp.example/token",
    "OIDC_OP_USER_ENDPOINT": "https://idp.example/userinfo",
    "OIDC_OP_JWKS_ENDPOINT": "https://idp.example/jwks",
}


def test_off_without_a_client_id() -> None:
    assert oidc({}) == {"MRTRWEB_OIDC_ENABLED": False}
    assert oidc({"OIDC_OP_ISSUER": "https://idp.example"}) == {"MRTRWEB_OIDC_ENABLED": False}


def test_an_issuer_alone_is_discovered_with_safe_defaults() -> None:
    found = oidc({**BASE, "OIDC_OP_ISSUER": "https://idp.example/realms/org/"})
    assert found["MRTRWEB_OIDC_ENABLED"] is True
    assert found["OIDC_OP_DISCOVERY_URL"] == (
        "https://idp.example/realms/org/.well-known/openid-configuration"
    )
    assert found["OIDC_OP_ISSUER"] == "https://idp.example/realms/org"
    assert found["OIDC_RP_SIGN_ALGO"] == "RS256"
    assert found["OIDC_RP_SCOPES"] == "openid email profile"
    assert found["MRTRWEB_OIDC_GROUPS_CLAIM"] == "groups"
    assert found["MRTRWEB_OIDC_GROUP_MAP"] == {}
    assert found["MRTRWEB_OIDC_TRUST_MFA"] is True
    assert found["MRTRWEB_OIDC_MFA_AMR"] == ["mfa", "otp"]
    assert found["MRTRWEB_OIDC_CREATE_USERS"] is True


def test_every_endpoint_with_an_issuer_needs_no_discovery() -> None:
    found = oidc({**BASE, **ENDPOINTS, "OIDC_OP_ISSUER": "https://idp.example"})
    assert found["OIDC_OP_DISCOVERY_URL"] == ""
    assert found["OIDC_OP_TOKEN_ENDPOINT"] == "https://idp.example/token"


@pytest.mark.parametrize(
    ("environ", "says"),
    [
        ({"OIDC_RP_CLIENT_ID": "mrtrweb"}, "OIDC_RP_CLIENT_SECRET"),
        (BASE, "OIDC_OP_DISCOVERY_URL or OIDC_OP_ISSUER"),
        ({**BASE, **ENDPOINTS}, "missing: OIDC_OP_ISSUER"),
        ({**BASE, "OIDC_OP_AUTHORIZATION_ENDPOINT": "https://x/a"}, "OIDC_OP_TOKEN_ENDPOINT"),
        ({**BASE, "OIDC_OP_ISSUER": "https://x", "OIDC_RP_SIGN_ALGO": "none"}, "signed"),
    ],
)
def test_half_a_configuration_is_refused(environ: dict[str, str], says: str) -> None:
    with pytest.raises(EnvError, match=says):
        oidc(environ)


def test_the_group_map() -> None:
    assert oidc_group_map(" idp-admins = Admins , idp-ops=Operators,idp-ops=Approvers,, ") == {
        "idp-admins": ["Admins"],
        "idp-ops": ["Operators", "Approvers"],
    }
    for wrong in ("idp-admins", "=Admins", "idp-admins="):
        with pytest.raises(EnvError, match="idp-group=App group"):
            oidc_group_map(wrong)


def test_what_counts_as_the_providers_second_factor() -> None:
    found = oidc(
        {
            **BASE,
            "OIDC_OP_ISSUER": "https://idp.example",
            "MRTRWEB_OIDC_MFA_AMR": "MFA,hwk",
            "MRTRWEB_OIDC_TRUST_MFA": "0",
        }
    )
    assert found["MRTRWEB_OIDC_MFA_AMR"] == ["mfa", "hwk"]
    assert found["MRTRWEB_OIDC_TRUST_MFA"] is False
