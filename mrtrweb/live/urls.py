from django.urls import path

from mrtrweb.live import views

app_name = "live"

urlpatterns = [
    path("calls/<int:pk>/next/", views.next_step, name="next"),
]
