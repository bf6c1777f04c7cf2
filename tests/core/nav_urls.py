"""A URL configuration where the home page lives elsewhere: for the menu links' tests."""

from django.http import HttpRequest, HttpResponse
from django.urls import include, path


def home(request: HttpRequest) -> HttpResponse:
    return HttpResponse("elsewhere")


core = ([path("elsewhere/", home, name="home")], "core")
urlpatterns = [path("", include(core))]
