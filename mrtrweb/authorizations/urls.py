from django.urls import path

from mrtrweb.authorizations import views

app_name = "authorizations"

# Mounted at /oauth/. The callback and the client ID metadata document are addresses other
# sites keep (the redirect URI, the client ID): they never change.
urlpatterns = [
    path("callback/", views.callback, name="callback"),
    path("not-connected/", views.failed, name="failed"),
    path("client-metadata.json", views.client_metadata, name="client-metadata"),
    path("accounts/", views.accounts, name="accounts"),
    path("connect/<slug:connection>/", views.connect, name="connect"),
    path("disconnect/<int:pk>/", views.disconnect, name="disconnect"),
    path("connections/<slug:name>/", views.connection_panel, name="connection"),
    path("connections/<slug:name>/discover/", views.discover_now, name="discover"),
    path("connections/<slug:name>/token/", views.client_token, name="client-token"),
]
