"""/api/v1/: the JSON API, its OpenAPI document and reference page.

Ids are matched loosely (``[^/]+``) and parsed by the views, and a catch-all comes last, so
every address under /api/v1/ answers with a JSON problem, never the HTML 404 page.
"""

from django.urls import path, re_path
from django.views.generic import RedirectView

from . import reference, views

app_name = "api"

urlpatterns = [
    path("openapi.json", reference.openapi_json, name="openapi"),
    path("docs/", reference.reference, name="reference"),
    # The catch-all below would otherwise answer before APPEND_SLASH could redirect.
    path("docs", RedirectView.as_view(pattern_name="api:reference"), name="reference_slash"),
    path("calls", views.calls, name="calls"),
    path("calls/<str:pk>", views.call_detail, name="call"),
    path("calls/<str:pk>/cancel", views.call_cancel, name="cancel"),
    path("rounds", views.rounds, name="rounds"),
    path("rounds/<str:pk>/responses", views.round_responses, name="responses"),
    path("servers", views.servers, name="servers"),
    path("servers/<str:name>", views.server_detail, name="server"),
    path("servers/<str:name>/test", views.server_test, name="server_test"),
    re_path(r"^(?P<rest>.*)$", reference.unknown, name="unknown"),
]
