from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe


@require_safe
def home(request: HttpRequest) -> HttpResponse:
    return render(request, "core/home.html")


@require_safe
def healthz(request: HttpRequest) -> HttpResponse:
    # Liveness only: answers without touching the database, so a slow database does not get
    # healthy web processes restarted.
    return HttpResponse("ok", content_type="text/plain")
