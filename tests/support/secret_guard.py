"""A suite-wide guard: no OAuth secret a test server issued is ever rendered or logged.

Every token, code, client secret and verifier the suite's OAuth servers issue carries
``MARK``. While a test runs, every response the Django test client gets (through this
middleware) and every log record (through ``LogGuard``) is searched for it; a hit fails the
test, naming where the secret showed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse

MARK = "sekret"


class SecretRendered(AssertionError):
    pass


class SecretGuardMiddleware:
    """Refuses any response whose body or headers carry an issued secret."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        where = f"{request.method} {request.path}"
        # Redirects to an authorization server carry codes and state in the URL by design:
        # what matters is that no secret of ours (a token, a verifier) is in them.
        for name, value in response.items():
            if MARK in value:
                raise SecretRendered(f"{where}: header {name} carries an issued secret")
        if not response.streaming and MARK.encode() in response.content:
            raise SecretRendered(f"{where}: the page carries an issued secret")
        return response


class LogGuard(logging.Handler):
    """Collects log records that carry an issued secret (checked after each test)."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.hits: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = record.getMessage()
        except Exception:  # a bad format string is another test's business
            return
        if record.exc_text:
            text += record.exc_text
        if MARK in text:
            self.hits.append(f"{record.name}: {text[:300]}")


def install(settings: Any) -> LogGuard:
    settings.MIDDLEWARE = [f"{__name__}.SecretGuardMiddleware", *settings.MIDDLEWARE]
    guard = LogGuard()
    logging.getLogger().addHandler(guard)
    return guard


def uninstall(guard: LogGuard) -> None:
    logging.getLogger().removeHandler(guard)
