from django.urls import path

from mrtrweb.dashboard import views

app_name = "dashboard"

urlpatterns = [
    path("", views.home, name="home"),
    path("rounds/", views.rounds, name="rounds"),
    path("rounds/bulk/", views.bulk, name="bulk"),
    path("calls/", views.calls, name="calls"),
    path("calls/<int:pk>/audit/", views.call_audit, name="call_audit"),
]
