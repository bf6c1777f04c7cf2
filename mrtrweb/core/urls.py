from django.urls import path

from mrtrweb.core import views

app_name = "core"

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    path("readyz", views.readyz, name="readyz"),
    # Browsers ask for /favicon.ico whatever the page says; send them to the site's own icon.
    path("favicon.ico", views.favicon, name="favicon"),
]
