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

The comparison is written here from public parts (``HttpRequest.get_host`` and ``is_secure``,
``CSRF_TRUSTED_ORIGINS``, ``django.utils.http.is_same_domain``) as Django documents the rule
for its CSRF check; the tests hold it to ``CsrfViewMiddleware``'s answer for a form's POST.
"""

from __future__ import annotations

import io
from typing import Any
from urllib.parse import urlsplit

from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.core.exceptions import DisallowedHost
from django.core.handlers.asgi import ASGIRequest
from django.http import HttpRequest
from django.utils.http import is_same_domain

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


def origin_allowed(scope: dict[str, Any]) -> bool:
    """Whether the page that opens this websocket may: same origin, or a trusted one."""
    request = handshake_request(scope)
    origin = request.META.get("HTTP_ORIGIN")
    if not origin or origin == "null":
        return False
    try:
        host = request.get_host()
    except DisallowedHost:
        return False
    if origin == f"{'https' if request.is_secure() else 'http'}://{host}":
        return True
    return trusted(origin)


def trusted(origin: str) -> bool:
    """Whether ``origin`` is one of ``CSRF_TRUSTED_ORIGINS`` (read now): the same string, or,
    for an entry ``scheme://*.domain``, the same scheme and a host of that domain."""
    try:
        parsed = urlsplit(origin)
    except ValueError:
        return False
    for entry in settings.CSRF_TRUSTED_ORIGINS:
        if "*" not in entry:
            if origin == entry:
                return True
            continue
        allowed = urlsplit(entry)
        if allowed.scheme == parsed.scheme and is_same_domain(
            parsed.netloc, allowed.netloc.lstrip("*")
        ):
            return True
    return False


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
        # types-channels wants asgiref's typed scope; this is the plain dict it is at runtime.
        return await WebsocketDenier.as_asgi()(scope, receive, send)  # type: ignore[arg-type]
