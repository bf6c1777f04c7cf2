"""The rows of a person's way through an authorization server (``PendingAuthorization``),
bound to them and to a secret of their session, ten minutes: the digests they are found by,
their expiry, and the drafts (what a person typed, kept while they connect) held in them.

Only digests are stored: of ``state`` (or of a held draft's key) and of the session's secret.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.http import HttpRequest
from django.utils import timezone

from mrtrweb.http import SignedInRequest
from mrtrweb.servers.models import Connection

from .addresses import safe_return_to
from .models import PendingAuthorization

__all__ = [
    "HELD",
    "PENDING_LIFETIME",
    "digest",
    "forget_expired",
    "hold_draft",
    "session_digest",
    "take_draft",
]

PENDING_LIFETIME = timedelta(minutes=10)
# The per-session secret a pending request is bound to (its digest is stored, not it).
SESSION_SECRET_KEY = "oauth_binding"
# Pending rows that only hold what a person typed, not yet an authorization request.
HELD = "held"


def digest(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


def session_digest(request: HttpRequest) -> str:
    """A digest of a random secret kept in this person's session (made on first use)."""
    secret = request.session.get(SESSION_SECRET_KEY)
    if not isinstance(secret, str) or not secret:
        secret = secrets.token_urlsafe(32)
        request.session[SESSION_SECRET_KEY] = secret
    return digest(secret)


def forget_expired() -> None:
    """Requests nobody came back from, and drafts nobody took back, go (a bounded table)."""
    PendingAuthorization.objects.filter(expires_at__lt=timezone.now()).delete()


# -- what a person typed, kept while they connect ----------------------------------------


def hold_draft(request: SignedInRequest, connection: Connection, return_to: str, draft: Any) -> str:
    """Keep ``draft`` (encrypted, bound to this person and session, ten minutes) and give
    the key that :func:`.flow.begin` (``held=``) or :func:`take_draft` gets it back with."""
    key = secrets.token_urlsafe(24)
    forget_expired()
    PendingAuthorization.objects.create(
        state_digest=digest(f"{HELD}:{key}"),
        session_digest=session_digest(request),
        user=request.user,
        connection=connection,
        kind=HELD,
        request={},
        return_to=safe_return_to(request, return_to, ""),
        draft=draft,
        expires_at=timezone.now() + PENDING_LIFETIME,
    )
    return key


def take_draft(request: SignedInRequest, connection: Connection, key: str) -> Any:
    """The draft kept under ``key`` for this person, session and connection (once), or None."""
    if not key:
        return None
    with transaction.atomic():
        row = (
            PendingAuthorization.objects.select_for_update()
            .filter(
                state_digest=digest(f"{HELD}:{key}"),
                kind=HELD,
                user=request.user,
                connection=connection,
            )
            .first()
        )
        if row is None or not hmac.compare_digest(row.session_digest, session_digest(request)):
            return None
        row.delete()
    return row.draft if row.expires_at > timezone.now() else None
