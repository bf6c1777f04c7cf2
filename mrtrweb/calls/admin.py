"""Calls, rounds and their audit trail in Django's admin: read-only views for support work.

Nothing here changes a status (only the engine does; the dashboard has the actions), nothing
is added or deleted, and a round's requestState is never shown: only its SHA-256.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import F, QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from mrtrweb.people.admin import ReadOnlyAdmin

from .models import Call, Event, Round

# Columns of a server that the admin never needs here: secrets (decrypted on load) and the
# catalog (large).
_CONNECTION_HEAVY = ("connection__bearer_token", "connection__headers", "connection__catalog")


def _call_link(call_id: int) -> str:
    return format_html(
        '<a href="{}">call {}</a>', reverse("admin:calls_call_change", args=[call_id]), call_id
    )


@admin.register(Call)
class CallAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "method",
        "target",
        "connection",
        "status",
        "started_by",
        "rounds_used",
        "created_at",
        "finished_at",
    )
    list_display_links = ("id", "target")
    list_filter = ("status", "method", "connection")
    search_fields = ("=id", "target", "started_by__username")
    list_select_related = ("connection", "started_by")
    # Counting every call on each page load is what makes a big table slow.
    show_full_result_count = False
    ordering = ("-created_at", "-id")
    fields = (
        "connection",
        "method",
        "target",
        "arguments_json",
        "tool",
        "started_by",
        "status",
        "rounds_used",
        "result",
        "error",
        "restarted_from",
        "created_at",
        "updated_at",
        "finished_at",
        "audit_trail",
    )

    def get_queryset(self, request: HttpRequest) -> QuerySet[Call]:
        return super().get_queryset(request).defer(*_CONNECTION_HEAVY)

    @admin.display(description="audit trail")
    def audit_trail(self, obj: Call) -> str:
        return format_html(
            '<a href="{}">the audit trail on the dashboard</a>',
            reverse("dashboard:call_audit", kwargs={"pk": obj.pk}),
        )


@admin.register(Round)
class RoundAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "call_link",
        "index",
        "tool",
        "status",
        "assigned_user",
        "assigned_group",
        "claimed_by",
        "created_at",
        "expires_at",
    )
    list_filter = ("status", "assigned_group", "call__connection")
    search_fields = ("=id", "=call__id", "call__target", "assigned_user__username")
    list_select_related = ("call", "assigned_user", "assigned_group", "claimed_by")
    show_full_result_count = False
    ordering = ("-created_at", "-id")
    # The state itself is excluded everywhere; its digest is what support needs.
    exclude = ("request_state",)
    fields = (
        "call",
        "index",
        "status",
        "input_requests",
        "has_request_state",
        "request_state_sha256",
        "unsupported_reason",
        "answers",
        "answered_by",
        "answered_at",
        "assigned_user",
        "assigned_group",
        "claimed_by",
        "claimed_at",
        "expires_at",
        "delivery_error",
        "created_at",
        "delivered_at",
    )

    def get_queryset(self, request: HttpRequest) -> QuerySet[Round]:
        return (
            super()
            .get_queryset(request)
            .defer("request_state", "call__arguments_json", "call__tool", "call__result")
        )

    @admin.display(description="call", ordering="call_id")
    def call_link(self, obj: Round) -> str:
        return _call_link(obj.call_id)

    @admin.display(description="tool", ordering="call__target")
    def tool(self, obj: Round) -> str:
        return obj.call.target


@admin.register(Event)
class EventAdmin(ReadOnlyAdmin):
    """The audit trail is append-only: no one changes or deletes an event, here or anywhere."""

    list_display = ("id", "created_at", "call_link", "round_index", "kind", "actor")
    list_filter = ("kind",)
    search_fields = ("=call__id", "kind", "actor__username")
    list_select_related = ("actor",)
    show_full_result_count = False
    ordering = ("-created_at", "-id")
    fields = ("call", "round", "kind", "actor", "detail", "created_at")

    def get_queryset(self, request: HttpRequest) -> QuerySet[Event]:
        return super().get_queryset(request).annotate(round_number=F("round__index"))

    @admin.display(description="call", ordering="call_id")
    def call_link(self, obj: Event) -> str:
        return _call_link(obj.call_id)

    @admin.display(description="round")
    def round_index(self, obj: Event) -> Any:
        return getattr(obj, "round_number", None) or "—"
