"""The app's URLs plus the Django floor's trivial view (``/bench-floor/``, bench-only)."""

from django.http import HttpRequest, HttpResponse, HttpResponseForbidden
from django.middleware.csrf import get_token
from django.urls import path
from django.views.decorators.http import require_http_methods

from mrtrweb.urls import urlpatterns as app_urlpatterns

from .heap import heap

FLOOR_PATH = "/bench-floor/"


@require_http_methods(["GET", "POST"])
def floor(request: HttpRequest) -> HttpResponse:
    """What every page of the app costs before it does anything: the middleware (sessions,
    CSRF, auth, messages, htmx, whitenoise...) and the signed-in check.

    A plain sync view like the app's own (so Django runs it in a thread, as it runs theirs).
    ``is_authenticated`` loads the session and the user, as ``login_required`` does; a POST
    answers 303 like the round form, a GET its CSRF token only (the floor of opening a page).
    """
    if not request.user.is_authenticated:
        # Not a redirect to the login page: the bench must notice a session it lost.
        return HttpResponseForbidden("not signed in")
    if request.method == "POST":
        response = HttpResponse(status=303)
        response["Location"] = FLOOR_PATH
        return response
    # The token a page's form carries ({% csrf_token %}), so the next POST passes the check.
    return HttpResponse(get_token(request), content_type="text/plain")


urlpatterns = [
    *app_urlpatterns,
    path(FLOOR_PATH.strip("/") + "/", floor, name="bench-floor"),
    # What the web process holds (bench/heap.py), for the memory phase.
    path("bench-heap/", heap, name="bench-heap"),
]
