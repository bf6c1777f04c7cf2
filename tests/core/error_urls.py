"""The site's URLs plus one page that fails, for the 500 page's tests."""

from django.http import HttpRequest, HttpResponse
from django.urls import path

from mrtrweb.urls import handler403, handler404, handler500, urlpatterns

__all__ = ["handler403", "handler404", "handler500", "urlpatterns"]


def boom(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("a bug in a view")


urlpatterns = [path("boom/", boom), *urlpatterns]
