from django.urls import path

from mrtrweb.calls.pages import call_views, views

app_name = "calls"

urlpatterns = [
    path("calls/", call_views.call_list, name="list"),
    path("calls/<int:pk>/", call_views.call_page, name="call"),
    path("calls/<int:pk>/restart/", call_views.restart, name="restart"),
    path("rounds/<int:pk>/", views.round_page, name="round"),
    path("rounds/<int:pk>/retry/", views.retry_delivery, name="retry"),
    path("rounds/<int:pk>/claim/", views.claim, name="claim"),
    path("rounds/<int:pk>/release/", views.release, name="release"),
]
