"""The site's URLs plus a page and an API address that fail, for the 500 page's tests."""

from django.http import HttpRequest, HttpResponse
from django.urls import path

from mrtrweb.urls import handler403, handler404, handler500, urlpatterns

__all__ = ["handler403", "handler404", "handler500", "urlpatterns"]


def boom(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("a bug in a view")


# Before the API's own catch-all: a fault outside its handlers, as a middleware's would be.
urlpatterns = [path("boom/", boom), path("api/v1/boom/", boom), *urlpatterns]
