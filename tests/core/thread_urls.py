"""The site's URLs plus pages that say which thread ran them (test_request_threads.py)."""

import threading

from django.http import HttpRequest, HttpResponse
from django.urls import path

from mrtrweb.urls import urlpatterns

# Two requests that must be in this view at the same time (each waits for the other).
together = threading.Barrier(2)


def which_thread(request: HttpRequest) -> HttpResponse:
    return HttpResponse(threading.current_thread().name)


def meet(request: HttpRequest) -> HttpResponse:
    together.wait(timeout=5)
    return HttpResponse(threading.current_thread().name)


urlpatterns = [path("thread/", which_thread), path("meet/", meet), *urlpatterns]
