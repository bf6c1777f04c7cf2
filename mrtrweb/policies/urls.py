"""/account/away/: a person's delegations (out of office)."""

from django.urls import path

from . import views

app_name = "away"

urlpatterns = [
    path("", views.away, name="away"),
    path("<int:pk>/end/", views.end, name="end"),
]
