"""Bearer-token authentication.

Only ``Authorization: Bearer mrtr_...`` authenticates an API request; a browser session does
not. So no API request carries an ambient credential a foreign page could ride on, and the
views are exempt from CSRF checks (django-ninja's default) for that reason alone (the pages
keep theirs).
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.db import OperationalError
from django.http import HttpRequest
from django.utils import timezone
from ninja.security.http import HttpAuthBase

from mrtrweb.people.roles import is_operator

from .models import ApiToken
from .problems import ApiError

# last_used_at is for people reviewing their tokens, not an audit log: one write a minute
# per token at most, so a busy program does not write on every request.
LAST_USED_EVERY = timedelta(minutes=1)
CHALLENGE = 'Bearer realm="mrtrweb"'

logger = logging.getLogger(__name__)


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


class BearerToken(HttpAuthBase):
    """django-ninja's auth for every operation: the token, or a 401 problem saying why (and,
    with ``operators=True``, a 403 for anyone but an operator, before the body is read).

    ``request.auth`` is then the :class:`ApiToken`.
    """

    openapi_scheme = "bearer"
    openapi_description = "A personal API token, mrtr_<prefix>_<secret>."

    def __init__(self, *, operators: bool = False) -> None:
        super().__init__()
        self.operators = operators

    def __call__(self, request: HttpRequest) -> ApiToken:
        token = authenticate(request)
        if self.operators and not is_operator(token.user):
            raise ApiError(403, "Only operators manage connections.", kind="forbidden")
        return token
