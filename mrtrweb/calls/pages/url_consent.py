"""Which URL-mode questions of a round a person agreed to open (by the section's prefix),
kept in their session: asked once per round, not again on each render, and forgotten once
the round is answered."""

from __future__ import annotations

from django.http import HttpRequest

from ..models import Round

__all__ = ["consented", "forget_consent", "record_consent"]

CONSENT_SESSION_KEY = "calls.url_consent"


def consented(request: HttpRequest, round: Round) -> frozenset[str]:
    return frozenset(request.session.get(CONSENT_SESSION_KEY, {}).get(str(round.pk), []))


def record_consent(request: HttpRequest, round: Round, prefix: str) -> None:
    stored = dict(request.session.get(CONSENT_SESSION_KEY, {}))
    prefixes = set(stored.get(str(round.pk), []))
    prefixes.add(prefix)
    stored[str(round.pk)] = sorted(prefixes)
    request.session[CONSENT_SESSION_KEY] = stored


def forget_consent(request: HttpRequest, round: Round) -> None:
    stored = dict(request.session.get(CONSENT_SESSION_KEY, {}))
    if stored.pop(str(round.pk), None) is not None:
        request.session[CONSENT_SESSION_KEY] = stored
