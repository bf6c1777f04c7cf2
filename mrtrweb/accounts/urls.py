"""/account/two-step/: the code after signing in, setting up an app, a person's own page."""

from django.urls import path

from . import views

app_name = "accounts"

urlpatterns = [
    path("", views.two_step, name="two_step"),
    path("code/", views.verify, name="verify"),
    path("set-up/", views.enrol, name="enrol"),
    path("backup-codes/", views.backup_codes, name="backup_codes"),
    path("turn-off/", views.turn_off, name="turn_off"),
]
