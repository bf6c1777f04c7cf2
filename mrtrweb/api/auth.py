"""Bearer-token authentication and the plumbing every API view shares.

Only ``Authorization: Bearer mrtr_...`` authenticates an API request; a browser session does
not. So no API request carries an ambient credential a foreign page could ride on, and the
views are exempt from CSRF checks for that reason alone (the pages keep theirs).
"""

from __future__ import annotations

import functools
import inspect
import json
import logging
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from asgiref.sync import sync_to_async
from django.db import OperationalError
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from pydantic import BaseModel

from .models import ApiToken
from .problems import ApiError, problem_response
from .schemas import dump

# last_used_at is for people reviewing their tokens, not an audit log: one write a minute
# per token at most, so a busy program does not write on every request.
LAST_USED_EVERY = timedelta(minutes=1)
CHALLENGE = 'Bearer realm="mrtrweb"'

logger = logging.getLogger(__name__)


def json_response(model: BaseModel, status: int = 200) -> HttpResponse:
    return HttpResponse(json.dumps(dump(model)), status=status, content_type="application/json")


def _unauthorized(detail: str, error: str) -> ApiError:
    return ApiError(
        401,
        detail,
        kind="unauthorized",
        headers={"WWW-Authenticate": f'{CHALLENGE}, error="{error}"'},
    )


def authenticate(request: HttpRequest) -> ApiToken:
    """The token the request presents, or a 401 :class:`ApiError`."""
    header = request.META.get("HTTP_AUTHORIZATION", "")
    scheme, _, credentials = header.partition(" ")
    if not header:
        raise ApiError(
            401,
            "Send an API token as “Authorization: Bearer mrtr_…”.",
            kind="unauthorized",
            headers={"WWW-Authenticate": CHALLENGE},
        )
    if scheme.lower() != "bearer" or not credentials.strip():
        raise _unauthorized("Use the Bearer scheme with an API token.", "invalid_request")
    token = ApiToken.authenticate(credentials.strip())
    if token is None:
        raise _unauthorized(
            "The token is unknown, revoked, or its user is inactive.", "invalid_token"
        )
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at > LAST_USED_EVERY:
        try:
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        except OperationalError:
            # A database busy past its lock timeout fails the request's own work, not this
            # note for people reviewing their tokens: the next request writes it.
            logger.info("API token %s: lastUsedAt not updated (database busy)", token.prefix)
        token.last_used_at = now
    return token


def api_view(*methods: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Token auth, allowed methods and problem responses for a (sync or async) API view.

    The view is called as ``view(request, token, **kwargs)``.
    """

    def allowed(request: HttpRequest) -> None:
        if request.method not in methods:
            raise ApiError(
                405,
                f"Use {', '.join(methods)}.",
                kind="method-not-allowed",
                headers={"Allow": ", ".join(methods)},
            )

    def decorate(view: Callable[..., Any]) -> Callable[..., Any]:
        if inspect.iscoroutinefunction(view):

            @functools.wraps(view)
            async def async_wrapper(request: HttpRequest, **kwargs: Any) -> HttpResponse:
                try:
                    allowed(request)
                    token = await sync_to_async(authenticate)(request)
                    return await view(request, token, **kwargs)
                except ApiError as error:
                    return problem_response(error)

            return csrf_exempt(async_wrapper)

        @functools.wraps(view)
        def wrapper(request: HttpRequest, **kwargs: Any) -> HttpResponse:
            try:
                allowed(request)
                token = authenticate(request)
                return view(request, token, **kwargs)
            except ApiError as error:
                return problem_response(error)

        return csrf_exempt(wrapper)

    return decorate
