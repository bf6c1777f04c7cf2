"""/api/v1/: the JSON API (django-ninja's operations, views.py), its OpenAPI document and
reference page.

Ids are matched loosely (``{id}`` is any path segment) and validated by django-ninja (an id
that is none is a 404), and a catch-all comes last, so every address under /api/v1/ answers
with a JSON problem, never the HTML 404 page; so does a method an address does not take.
"""

from django.urls import path, re_path
from django.views.generic import RedirectView

from . import reference, servers, views  # noqa: F401  (the operations register on the API)
from .service import url_patterns

app_name = "api"

urlpatterns = [
    path("openapi.json", reference.openapi_json, name="openapi"),
    path("docs/", reference.reference, name="reference"),
    # The catch-all below would otherwise answer before APPEND_SLASH could redirect.
    path("docs", RedirectView.as_view(pattern_name="api:reference"), name="reference_slash"),
    *url_patterns(),
    re_path(r"^(?P<rest>.*)$", reference.unknown, name="unknown"),
]
