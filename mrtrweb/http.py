"""HTTP responses every app's views share."""

from __future__ import annotations

from django.http import HttpResponseRedirect


class SeeOther(HttpResponseRedirect):
    """303 See Other: after a POST the browser GETs the page it leads to, and never repeats
    the POST (a 302 may be repeated with the same method by some clients)."""

    status_code = 303
