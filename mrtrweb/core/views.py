from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import render
from django.templatetags.static import static
from django.views.decorators.cache import cache_control, never_cache
from django.views.decorators.http import require_safe

from mrtrweb.core.readiness import run_checks


@require_safe
def home(request: HttpRequest) -> HttpResponse:
    return render(request, "core/home.html")


@require_safe
@cache_control(max_age=86400, public=True)
def favicon(request: HttpRequest) -> HttpResponse:
    # A redirect, not the file: the static file's hashed name changes with the icon, and
    # WhiteNoise serves that one with far-future caching.
    return HttpResponseRedirect(static("mrtrweb/favicon.svg"))


@require_safe
def healthz(request: HttpRequest) -> HttpResponse:
    # Liveness only: answers without touching the database, so a slow database does not get
    # healthy web processes restarted.
    return HttpResponse("ok", content_type="text/plain")


@never_cache
@require_safe
async def readyz(request: HttpRequest) -> HttpResponse:
    # Readiness: take this process out of the load balancer while a service it needs is down.
    outcomes = await run_checks()
    ready = all(outcome.ok for outcome in outcomes)
    body = {
        "status": "ready" if ready else "unavailable",
        "checks": {outcome.name: outcome.as_json() for outcome in outcomes},
    }
    response = JsonResponse(body, status=200 if ready else 503)
    # Readiness logged why it is not ready: Django's own line is filtered out (settings.LOGGING,
    # core.log_filters.ReadinessLogsItself).
    return response
