"""``Idempotency-Key`` on ``POST /api/v1/calls``: a program's retry never starts a second call.

A key is the program's name for one request, unique per API token. The first request with a
key stores it, with a fingerprint of its body and the call it started, in the transaction
that creates the call (:func:`remember`, run by ``engine.create_call``). A later request with
the same key and the same body gets that call (``200``) instead of a new one; with another
body it is refused (``422``, ``idempotency-key-reused``). Of concurrent requests with the same
key the unique constraint lets one commit; the others roll back whole and answer with its
call (which may still be running: a key and its call are committed together, so there is
never a key without its call to wait for). Keys are honoured for :data:`TTL`; a request
that failed (any 4xx or 5xx) stored nothing, so its key is free.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timedelta
from typing import Annotated, Any

from django.utils import timezone
from ninja import Header
from pydantic import BaseModel, BeforeValidator

from mrtrweb.calls.models import Call

from .models import ApiToken, IdempotencyKey
from .problems import ApiError
from .schemas import ProblemField

HEADER = "Idempotency-Key"
TTL = timedelta(hours=24)
MAX_LENGTH = 255


def _unquoted(raw: Any) -> Any:
    if not isinstance(raw, str):
        return raw
    key = raw.strip()
    if len(key) >= 2 and key[0] == key[-1] == '"':
        key = key[1:-1]  # the IETF draft sends it as a structured-field string: "..."
    return key


# The header as POST /calls declares it: django-ninja reads, validates (a malformed key is a
# 422 naming the header) and documents it; None when it is not sent.
Key = Annotated[str, BeforeValidator(_unquoted)]
PARAMETER = Header(
    None,
    alias=HEADER,
    min_length=1,
    max_length=MAX_LENGTH,
    # Visible ASCII and inner spaces: what every HTTP client sends as is (UUIDs, ULIDs, ...).
    pattern=r"^[!-~]([ -~]*[!-~])?$",
    description=(
        "Your name for this request (a UUID, say), new for each new request: a retry with the "
        "same key and the same body gets the call the first request started (`200`, "
        "`Idempotent-Replayed: true`) instead of starting another; the same key with another "
        f"body is a `422`. Keys are kept {TTL.total_seconds() / 3600:g} hours, per API token. "
        "Of concurrent requests with the same key, one starts the call and the others answer "
        "`200` with it, even while it still runs."
    ),
)


def fingerprint(body: BaseModel) -> str:
    """SHA-256 of the validated body as canonical JSON: key order, spacing and fields left at
    their defaults do not make two requests different."""
    canonical = json.dumps(
        body.model_dump(mode="json"), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


def find(token: ApiToken, key: str, *, now: datetime | None = None) -> IdempotencyKey | None:
    """The key as stored by an earlier request of ``token`` that is still honoured."""
    since = (now or timezone.now()) - TTL
    return (
        IdempotencyKey.objects.select_related("call")
        .filter(token=token, key=key, created_at__gt=since)
        .first()
    )


def call_for(earlier: IdempotencyKey, fingerprint: str) -> Call:
    """The call the earlier request started, if this request is the same; a 422 otherwise."""
    if earlier.fingerprint != fingerprint:
        detail = (
            f"This {HEADER} was used for another request (a different body) in the last "
            f"{TTL.total_seconds() / 3600:g} hours: send a new key with a new request."
        )
        raise ApiError(
            422,
            detail,
            kind="idempotency-key-reused",
            errors=[ProblemField(detail=detail, parameter=HEADER)],
        )
    return earlier.call


def remember(token: ApiToken, key: str, fingerprint: str, call: Call) -> None:
    """Store the key for ``call``; run inside the transaction that creates the call. Raises
    ``IntegrityError`` when a concurrent request stored the same key first."""
    # A key past its lifetime may be used again: its row gives way to the new one.
    IdempotencyKey.objects.filter(
        token=token, key=key, created_at__lte=timezone.now() - TTL
    ).delete()
    IdempotencyKey.objects.create(token=token, key=key, fingerprint=fingerprint, call=call)


def prune(*, now: datetime | None = None) -> int:
    """Delete the keys no longer honoured; returns how many."""
    deleted, _ = IdempotencyKey.objects.filter(
        created_at__lte=(now or timezone.now()) - TTL
    ).delete()
    return deleted
