from django.urls import path

from . import views

app_name = "policies"

urlpatterns = [
    path("<slug:name>/policy/", views.policy, name="policy"),
]
