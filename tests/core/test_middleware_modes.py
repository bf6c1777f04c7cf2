"""Under ASGI, a request crosses between the event loop and a thread as few times as the
middleware order allows.

Django runs the middlewares outside the innermost sync-only one in that middleware's thread,
with no crossing between them; those inside it run on the event loop, where each of Django's
``MiddlewareMixin`` middlewares hops to a thread and back for its ``process_request`` and its
``process_response``. So only natively async middleware (no such halves) may sit inside the
innermost sync-only one (``settings.MIDDLEWARE``, the app's own three before axes).
"""

from __future__ import annotations

from django.conf import settings
from django.utils.deprecation import MiddlewareMixin
from django.utils.module_loading import import_string


def _sync_only(middleware: type) -> bool:
    return getattr(middleware, "sync_capable", True) and not getattr(
        middleware, "async_capable", False
    )


def _hops_on_the_loop(middleware: type) -> bool:
    """Whether, run on the event loop, it hops to a thread for a half of its work."""
    return issubclass(middleware, MiddlewareMixin) and any(
        hasattr(middleware, half) for half in ("process_request", "process_response")
    )


def test_only_natively_async_middleware_runs_inside_the_innermost_sync_only_one() -> None:
    classes = [import_string(path) for path in settings.MIDDLEWARE]
    sync_only = [i for i, middleware in enumerate(classes) if _sync_only(middleware)]
    assert sync_only, "the app's own middlewares are sync only"
    inside = classes[sync_only[-1] + 1 :]
    assert not [m.__name__ for m in inside if _hops_on_the_loop(m)]
    # Axes last, as it asks.
    assert settings.MIDDLEWARE[-1] == "axes.middleware.AxesMiddleware"


def test_the_rule_tells_the_kinds_apart() -> None:
    from axes.middleware import AxesMiddleware
    from django.contrib.messages.middleware import MessageMiddleware

    from mrtrweb.accounts.languages import LanguageMiddleware

    assert _sync_only(LanguageMiddleware) and not _sync_only(MessageMiddleware)
    assert _hops_on_the_loop(MessageMiddleware) and not _hops_on_the_loop(AxesMiddleware)
