"""One delivery attempt: sign, POST, record the outcome, and say when to try again.

Outcomes: a 2xx answer delivers. A 5xx, 408 or 429 answer, a timeout or a network error is
retried (the scheduler queues it, :mod:`.due`) after ``backoff * 2**(attempt-1)`` seconds (capped
at ``backoff_max``, ±20 % jitter, at least a 429/503's ``Retry-After``, in seconds or as an
HTTP date), until
``max_attempts`` attempts were made. Any other answer (3xx: redirects are never followed;
4xx) gives up at once, as does a destination the rules refuse or a URL the client cannot
use (one stored before the checks knew to refuse it). No error ends the task with a
traceback: each is an attempt recorded with a plain reason and one log line. A revoked or
deleted token cancels what is still pending. Every attempt is recorded on the Delivery and
in the call's audit trail (``webhook_delivered``, ``webhook_failed``,
``webhook_cancelled``), with the destination's host only: never the URL's path or query, the
secret or the body.
"""

from __future__ import annotations

import logging
import random
import time
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

import httpx
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from mrtrweb.calls import engine
from mrtrweb.mcp import retry_after_seconds

from . import conf, signing, transport
from .destinations import InvalidWebhookURL, check_url
from .models import Delivery

logger = logging.getLogger(__name__)

RETRYABLE_STATUS = frozenset({408, 429})
# How long a delivery the scheduler queued, or one just created, is left to its task before it
# is queued again (a queue that was down, a worker killed with it); an attempt in flight is
# given its timeout on top (:func:`in_flight_until`).
LEASE = timedelta(seconds=60)
JITTER = 0.2


def in_flight_until(now: Any) -> Any:
    """When an attempt claimed ``now`` is due again should its worker die: a receiver drops
    the rare duplicate by ``X-Mrtr-Delivery``, which never changes."""
    return now + timedelta(seconds=conf.timeout()) + LEASE


def backoff_delay(attempt: int, retry_after: float | None = None) -> float:
    """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
    ceiling = conf.backoff_max()
    delay = min(conf.backoff() * 2 ** (attempt - 1), ceiling)
    delay *= random.uniform(1 - JITTER, 1 + JITTER)
    if retry_after is not None:
        delay = max(delay, min(retry_after, ceiling))
    return delay


def attempt(delivery_id: int) -> float | None:
    """Make the next attempt of a pending delivery (nothing if it is not pending, or another
    run of the same task claimed it); the seconds after which to try again, or None."""
    delivery = (
        Delivery.objects.select_related("subscription__token__user", "call", "round")
        .filter(pk=delivery_id)
        .first()
    )
    if delivery is None or delivery.status != Delivery.Status.PENDING:
        return None
    number = delivery.attempts + 1
    # Claim this attempt: if the same task ran twice, only one sends.
    if not Delivery.objects.filter(
        pk=delivery.pk, status=Delivery.Status.PENDING, attempts=delivery.attempts
    ).update(attempts=F("attempts") + 1, next_attempt_at=in_flight_until(timezone.now())):
        return None
    delivery.attempts = number
    subscription = delivery.subscription
    if not subscription.can_send:
        _finish(
            delivery,
            Delivery.Status.CANCELLED,
            "webhook_cancelled",
            error="the API token was revoked or deleted",
        )
        return None
    try:
        check_url(subscription.url)
    except InvalidWebhookURL as exc:
        _finish(delivery, Delivery.Status.FAILED, "webhook_failed", error=str(exc))
        return None
    status_code, error, retry_after, refused, elapsed = _post(delivery)
    if status_code is not None and 200 <= status_code < 300:
        _finish(
            delivery,
            Delivery.Status.DELIVERED,
            "webhook_delivered",
            status_code=status_code,
            elapsed=elapsed,
        )
        return None
    retryable = not refused and (
        status_code is None or status_code >= 500 or status_code in RETRYABLE_STATUS
    )
    if status_code is not None and not error:
        error = f"HTTP {status_code}"
    if not retryable or number >= conf.max_attempts():
        _finish(
            delivery,
            Delivery.Status.FAILED,
            "webhook_failed",
            status_code=status_code,
            error=error,
            elapsed=elapsed,
        )
        return None
    delay = backoff_delay(number, retry_after)
    _finish(
        delivery,
        Delivery.Status.PENDING,
        "webhook_failed",
        status_code=status_code,
        error=error,
        elapsed=elapsed,
        retry_in=delay,
    )
    return delay


def _post(delivery: Delivery) -> tuple[int | None, str, float | None, bool, float]:
    """POST the delivery: (status code, error, Retry-After seconds, refused, elapsed)."""
    body = delivery.body.encode()
    token = delivery.subscription.token
    assert token is not None  # can_send held before the post
    secret = token.webhook_secret
    # Signed afresh on every attempt: a retry half an hour later is still fresh.
    now = int(time.time())
    headers = {
        "Content-Type": "application/json",
        "X-Mrtr-Event": delivery.event,
        "X-Mrtr-Delivery": str(delivery.uuid),
        "X-Mrtr-Attempt": str(delivery.attempts),
        **signing.standard_headers(secret, str(delivery.uuid), body, now),
        # Until 0.3.0, for receivers written before the Standard Webhooks headers.
        "X-Mrtr-Signature": signing.sign(secret, body, now),
    }
    url = delivery.subscription.url
    started = time.monotonic()
    try:
        with (
            transport.client(conf.timeout()) as client,
            client.stream("POST", url, content=body, headers=headers) as r,
        ):
            # The response body is never read: only the status matters.
            return r.status_code, "", _retry_after(r), False, time.monotonic() - started
    except httpx.TimeoutException as exc:
        error = f"timed out after {conf.timeout():g} s ({type(exc).__name__})"
        return None, error, None, False, time.monotonic() - started
    except httpx.HTTPError as exc:
        refused = transport.was_refused(exc) or isinstance(exc, httpx.UnsupportedProtocol)
        error = str(exc) if refused else f"{type(exc).__name__}: {exc}"
        return None, _scrub(error, url), None, refused, time.monotonic() - started
    except (httpx.InvalidURL, ValueError) as exc:
        # A URL stored before check_url knew to refuse it (IDNA errors are ValueErrors):
        # it will never work, so this is a refusal, not a retry.
        error = f"the URL cannot be used: {exc}"
        return None, _scrub(error, url), None, True, time.monotonic() - started
    except Exception as exc:
        # Whatever else the client raises is one failed attempt under the usual policy,
        # recorded with its reason; never a task that dies with a traceback.
        error = f"{type(exc).__name__}: {exc}"
        return None, _scrub(error, url), None, False, time.monotonic() - started


def _scrub(error: str, url: str) -> str:
    """An error message without the URL's path or query, which may carry a receiver's
    secret: the trail names the host only."""
    return error.replace(url, _host(url) or "the URL")


def _host(url: str) -> str:
    try:
        return urlsplit(url).hostname or ""
    except ValueError:  # a malformed URL stored before the checks refused it
        return ""


def _retry_after(response: httpx.Response) -> float | None:
    if response.status_code not in (429, 503):
        return None
    return retry_after_seconds(response.headers.get("Retry-After"))


def _finish(
    delivery: Delivery,
    status: str,
    kind: str,
    *,
    status_code: int | None = None,
    error: str = "",
    elapsed: float | None = None,
    retry_in: float | None = None,
) -> None:
    now = timezone.now()
    error = error[:500]
    entry: dict[str, Any] = {
        "attempt": delivery.attempts,
        "at": now.isoformat(),
        "status_code": status_code,
        "error": error,
        "duration_ms": round(elapsed * 1000) if elapsed is not None else None,
    }
    next_at = now + timedelta(seconds=retry_in) if retry_in is not None else None
    detail: dict[str, Any] = {
        "event": delivery.event,
        "delivery": str(delivery.uuid),
        "attempt": delivery.attempts,
        "host": _host(delivery.subscription.url),
        "http_status": status_code,
    }
    if error:
        detail["reason"] = error
    if kind == "webhook_failed":
        detail["retry_in_seconds"] = round(retry_in, 1) if retry_in is not None else None
        detail["gave_up"] = retry_in is None
    with transaction.atomic():
        Delivery.objects.filter(pk=delivery.pk).update(
            status=status,
            history=[*delivery.history, entry],
            last_status_code=status_code,
            last_error=error,
            next_attempt_at=next_at,
            delivered_at=now if status == Delivery.Status.DELIVERED else None,
        )
        engine.note(delivery.call, kind, round=delivery.round, **detail)
    log = logger.info if status != Delivery.Status.FAILED else logger.warning
    # One line, with the reason and never a traceback: a receiver's failure is routine.
    log(
        "webhook %s of call %s attempt %s: %s%s",
        delivery.event,
        delivery.call_id,
        delivery.attempts,
        kind,
        f" ({error})" if error else "",
    )
