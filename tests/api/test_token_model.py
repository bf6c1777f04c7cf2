"""API tokens are stored as digests, shown once, and stop working when revoked."""

from __future__ import annotations

import pytest
from django.db import connection

from mrtrweb.api.models import ApiToken
from tests.support.factories import make_user

pytestmark = pytest.mark.django_db


def test_a_token_authenticates_until_revoked_and_only_its_digest_is_stored() -> None:
    ada = make_user("ada")
    token, plain = ApiToken.issue(ada, "ci")
    assert plain.startswith(f"mrtr_{token.prefix}_")
    assert ApiToken.authenticate(plain) == token
    with connection.cursor() as cursor:
        cursor.execute("SELECT token_hash, webhook_secret FROM api_apitoken")
        stored_hash, stored_secret = cursor.fetchone()
    assert plain not in stored_hash and stored_hash == token.token_hash
    assert token.webhook_secret and token.webhook_secret not in stored_secret
    assert ApiToken.authenticate(plain + "x") is None
    assert ApiToken.authenticate("Bearer " + plain) is None
    token.revoke()
    assert ApiToken.authenticate(plain) is None


def test_a_deactivated_users_tokens_stop_working() -> None:
    ada = make_user("ada")
    _, plain = ApiToken.issue(ada, "ci")
    ada.is_active = False
    ada.save()
    assert ApiToken.authenticate(plain) is None
