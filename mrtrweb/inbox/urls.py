from django.urls import path

from mrtrweb.inbox import views

app_name = "inbox"

urlpatterns = [
    path("", views.index, name="index"),
    path("history/", views.history, name="history"),
]
