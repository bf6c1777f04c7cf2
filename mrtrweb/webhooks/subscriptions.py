"""Subscribing a URL to a call's events."""

from __future__ import annotations

from django.db import IntegrityError, transaction

from mrtrweb.api.models import ApiToken
from mrtrweb.calls.models import Call, Round

from . import events
from .destinations import check_url
from .models import Subscription


def subscribe(call: Call, url: str, token: ApiToken) -> None:
    """Send ``call``'s webhooks to ``url``, signed with ``token``'s webhook secret.

    Raises :class:`~mrtrweb.webhooks.InvalidWebhookURL` for a URL that may not receive
    webhooks. The JSON API calls it inside the transaction that creates the call
    (``engine.create_call``'s ``with_call``), so the call never exists without it and every
    event is heard. Subscribed later, what already happened is delivered now: the pending
    rounds, or the finished call.
    """
    url = check_url(url)
    try:
        with transaction.atomic():
            subscription, _ = Subscription.objects.get_or_create(call=call, token=token, url=url)
    except IntegrityError:
        subscription = Subscription.objects.get(call=call, token=token, url=url)
    subscription = Subscription.objects.select_related("token__user").get(pk=subscription.pk)
    active = events.active([subscription])
    if not active:
        return
    call.refresh_from_db()
    if call.is_finished:
        events.call_finished(call, active)
        return
    for round in call.rounds.filter(status=Round.Status.PENDING).select_related("call"):
        events.round_pending(round, active)
