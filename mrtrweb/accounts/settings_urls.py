"""/account/: a person's own settings."""

from django.urls import path

from . import settings_views

app_name = "account"

urlpatterns = [
    path("", settings_views.account, name="settings"),
]
