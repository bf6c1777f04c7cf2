"""/oidc/: single sign-on. Un-namespaced: mozilla-django-oidc reverses
``oidc_authentication_callback`` for the address the provider sends people back to."""

from django.urls import path

from .oidc import OidcCallback, OidcStart

urlpatterns = [
    path("authenticate/", OidcStart.as_view(), name="oidc_authentication_init"),
    path("callback/", OidcCallback.as_view(), name="oidc_authentication_callback"),
]
