"""The site's own error pages: 403, 404 and 500 with the site's header, the reason the code
gave, and a way back (wired as ``handler403``/``handler404``/``handler500`` in mrtrweb/urls.py).

Django's own handlers render ``403.html``/``404.html`` too, but drop the reason of a 404 that
is not a plain sentence and offer no way back; a 500 page here renders without the request's
context processors (no database: the database may be why it failed) and falls back to plain
HTML should even that fail.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

from django.http import (
    HttpRequest,
    HttpResponseForbidden,
    HttpResponseNotFound,
    HttpResponseServerError,
)
from django.template import loader
from django.utils.functional import Promise
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.views.decorators.csrf import requires_csrf_token

logger = logging.getLogger(__name__)

# get_object_or_404's message names the model: "No Round matches the given query."
_NO_MATCH = re.compile(r"^No (?P<model>[A-Za-z][A-Za-z0-9]*) matches the given query\.$")
# Split a class name into words: "ToolExposure" -> "tool exposure".
_WORDS = re.compile(r"(?<!^)(?=[A-Z])")

PLAIN_500 = (
    "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
    "<title>Something went wrong · mrtrweb</title></head><body><h1>Something went wrong</h1>"
    "<p>The site could not show this page. The error was logged; try again in a moment.</p>"
    "<p><a href='/'>Home</a></p></body></html>"
)


def reason_of(exception: BaseException | None) -> str:
    """The sentence the code gave with its 403 or 404, or "" when it gave none.

    Only a string argument counts (a ``Resolver404`` carries a dict of the patterns tried,
    which is for developers); get_object_or_404's "No X matches the given query." is said in
    words a person reads.
    """
    if exception is None or not exception.args:
        return ""
    message = exception.args[0]
    if isinstance(message, Promise):  # a translated reason (gettext_lazy), in the reader's language
        return str(message).strip()
    if not isinstance(message, str):
        return ""
    message = message.strip()
    match = _NO_MATCH.match(message)
    if match:
        what = _WORDS.sub(" ", match["model"]).lower()
        return _("There is no such %(what)s here.") % {"what": what}
    return message


def came_from(request: HttpRequest) -> str:
    """The page of this site the person came from, if the browser said (else "").

    Only the site's own pages (same host and scheme) and never the failing page itself, so the
    link cannot send anyone elsewhere or in a circle.
    """
    referer = request.META.get("HTTP_REFERER", "")
    if not referer:
        return ""
    if not url_has_allowed_host_and_scheme(
        referer, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return ""
    if referer == request.build_absolute_uri():
        return ""
    return referer


def _context(request: HttpRequest, exception: BaseException | None) -> dict[str, Any]:
    return {
        "reason": reason_of(exception),
        "came_from": came_from(request),
        "request_path": request.path,
    }


@requires_csrf_token
def permission_denied(
    request: HttpRequest, exception: BaseException | None = None
) -> HttpResponseForbidden:
    body = loader.render_to_string("403.html", _context(request, exception), request)
    return HttpResponseForbidden(body)


@requires_csrf_token
def page_not_found(
    request: HttpRequest, exception: BaseException | None = None
) -> HttpResponseNotFound:
    body = loader.render_to_string("404.html", _context(request, exception), request)
    return HttpResponseNotFound(body)


# A fault that escaped the API's own handler (mrtrweb/api/service.py), in a middleware say:
# a program reading the API still gets a problem, in the API's shape.
API_PATH = "/api/"
API_500 = json.dumps(
    {
        "type": "/api/v1/docs/#problem-internal",
        "title": "Internal error",
        "status": 500,
        "detail": "Something went wrong on our side; it was logged. Try again later.",
        "errors": [],
    }
)


@requires_csrf_token
def server_error(request: HttpRequest) -> HttpResponseServerError:
    if request.path.startswith(API_PATH):
        return HttpResponseServerError(API_500, content_type="application/problem+json")
    # No request passed to the template: no context processor runs (they read the database,
    # which may be what failed), and no user is looked up.
    try:
        body: str = loader.render_to_string("500.html", {})
    except Exception:
        logger.exception("the 500 page could not be rendered")
        body = PLAIN_500
    return HttpResponseServerError(body)
