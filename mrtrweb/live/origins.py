"""Which pages may open a websocket: the rule Django's CSRF check applies to a form's POST.

A browser sends the site's cookies with a websocket handshake whatever page opens it, and
cookies belong to a host, not to a port or a scheme: a page served from ``127.0.0.1:9999``
opening ``ws://127.0.0.1:8000/ws/inbox/`` carries the session of a person signed in on
``127.0.0.1:8000``. So the handshake's ``Origin`` header is checked exactly as
``CsrfViewMiddleware`` checks it on a POST: it must be the request's own origin (the scheme,
``ws`` read as ``http`` and ``wss`` as ``https`` unless ``SECURE_PROXY_SSL_HEADER`` says
otherwise, and the ``Host`` header, port included) or one of ``CSRF_TRUSTED_ORIGINS``
(``https://*.example.com`` covers its subdomains). The ``Host`` must be one of
``ALLOWED_HOSTS``, as for any page. A handshake without an ``Origin``, or with ``null`` (a
sandboxed frame, a ``file:`` page), is refused: browsers always send one.
"""

from __future__ import annotations

import io
from typing import Any

from channels.security.websocket import WebsocketDenier
from django.core.exceptions import DisallowedHost
from django.core.handlers.asgi import ASGIRequest
from django.http import HttpRequest, HttpResponse
from django.middleware.csrf import CsrfViewMiddleware

# The scheme of the page that may open a socket of this scheme.
_PAGE_SCHEME = {"ws": "http", "wss": "https"}


def handshake_request(scope: dict[str, Any]) -> HttpRequest:
    """The websocket handshake as the HTTP request Django would see for a page at its address."""
    scheme = str(scope.get("scheme") or "ws")
    http_scope = {
        **scope,
        "type": "http",
        "method": "GET",
        "scheme": _PAGE_SCHEME.get(scheme, scheme),
    }
    return ASGIRequest(http_scope, io.BytesIO())


def _no_view(request: HttpRequest) -> HttpResponse:
    raise AssertionError("the origin check never calls a view")


def origin_allowed(scope: dict[str, Any]) -> bool:
    """Whether the page that opens this websocket may: same origin, or a trusted one."""
    request = handshake_request(scope)
    origin = request.META.get("HTTP_ORIGIN")
    if not origin or origin == "null":
        return False
    try:
        request.get_host()
    except DisallowedHost:
        return False
    # Django's own comparison (the same one its CSRF check makes for a form posted with an
    # Origin header), so forms and sockets can never disagree; a fresh instance reads the
    # settings of the moment.
    return CsrfViewMiddleware(_no_view)._origin_verified(request)


class SameOriginValidator:
    """ASGI middleware: websockets whose ``Origin`` fails :func:`origin_allowed` are refused
    at the handshake (HTTP 403), before anything reads the session."""

    def __init__(self, application: Any) -> None:
        self.application = application

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if scope["type"] != "websocket":
            raise ValueError("SameOriginValidator guards websockets only")
        if origin_allowed(scope):
            return await self.application(scope, receive, send)
        return await WebsocketDenier.as_asgi()(scope, receive, send)
