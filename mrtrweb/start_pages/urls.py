from django.urls import path

from mrtrweb.start_pages import views

app_name = "starting"

urlpatterns = [
    path("calls/start/", views.start, name="pick"),
    path("calls/start/<slug:connection>/", views.start_on, name="start"),
]
