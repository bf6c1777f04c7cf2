"""Webhook subscriptions and deliveries in Django's admin: read-only, for support work.

Nothing is added, changed or deleted here; the token's webhook secret is never shown.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html

from mrtrweb.people.admin import ReadOnlyAdmin

from .models import Delivery, Subscription


class _CallRecordAdmin(ReadOnlyAdmin):
    """Read-only, linking to the call the record belongs to."""

    @admin.display(description="call", ordering="call_id")
    def call_link(self, obj: Any) -> str:
        return format_html(
            '<a href="{}">call {}</a>',
            reverse("admin:calls_call_change", args=[obj.call_id]),
            obj.call_id,
        )


@admin.register(Subscription)
class SubscriptionAdmin(_CallRecordAdmin):
    list_display = ("id", "call_link", "url", "token", "created_at")
    search_fields = ("=call__id", "url", "token__user__username")
    list_select_related = ("token",)
    ordering = ("-created_at", "-id")
    fields = ("call_link", "url", "token", "created_at")


@admin.register(Delivery)
class DeliveryAdmin(_CallRecordAdmin):
    list_display = (
        "id",
        "call_link",
        "event",
        "status",
        "attempts",
        "last_status_code",
        "host",
        "created_at",
        "delivered_at",
    )
    list_filter = ("status", "event")
    search_fields = ("=call__id", "=uuid", "subscription__url")
    list_select_related = ("subscription",)
    show_full_result_count = False
    ordering = ("-created_at", "-id")
    fields = (
        "uuid",
        "call_link",
        "round",
        "event",
        "destination",
        "status",
        "attempts",
        "last_status_code",
        "last_error",
        "next_attempt_at",
        "attempt_history",
        "sent_body",
        "created_at",
        "delivered_at",
    )

    @admin.display(description="host")
    def host(self, obj: Delivery) -> str:
        return urlsplit(obj.subscription.url).hostname or ""

    @admin.display(description="URL")
    def destination(self, obj: Delivery) -> str:
        return obj.subscription.url

    @admin.display(description="attempts, oldest first")
    def attempt_history(self, obj: Delivery) -> str:
        return format_html("<pre>{}</pre>", json.dumps(obj.history, indent=2))

    @admin.display(description="body")
    def sent_body(self, obj: Delivery) -> str:
        return format_html("<pre>{}</pre>", json.dumps(obj.payload, indent=2, ensure_ascii=False))
