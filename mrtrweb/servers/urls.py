from django.urls import path

from mrtrweb.servers import views

app_name = "servers"

# "new/" cannot clash with a connection: every per-connection page has a suffix.
urlpatterns = [
    path("", views.connection_list, name="list"),
    path("new/", views.connection_create, name="create"),
    path("<slug:name>/edit/", views.connection_edit, name="edit"),
    path("<slug:name>/test/", views.connection_test, name="test"),
    path("<slug:name>/catalog/", views.catalog, name="catalog"),
    path("<slug:name>/exposure/", views.exposure, name="exposure"),
    path("<slug:name>/toggle/", views.connection_toggle, name="toggle"),
]
