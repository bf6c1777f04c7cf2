"""/account/away/: a person's delegations (out of office)."""

from django.urls import path

from . import away

app_name = "away"

urlpatterns = [
    path("", away.away, name="away"),
    path("<int:pk>/end/", away.end, name="end"),
]
