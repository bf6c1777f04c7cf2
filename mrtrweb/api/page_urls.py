"""/account/tokens/: a person's API tokens (access tested in tests/api/test_token_pages.py)."""

from django.urls import path

from . import tokens

app_name = "tokens"

urlpatterns = [
    path("", tokens.token_list, name="list"),
    path("<int:pk>/revoke/", tokens.token_revoke, name="revoke"),
    path("<int:pk>/webhook-secret/", tokens.token_secret, name="secret"),
]
