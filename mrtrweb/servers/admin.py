"""Server connections and tool exposure in Django's admin, for support work.

The bearer token and the custom headers are write-only here as everywhere: the form offers
to replace or clear them and says whether one is set, but never renders a stored value (the
list and the form do not even load them, so they are not decrypted). Connections are not
deleted (calls keep pointing at them): they are disabled.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.db import models
from django.db.models import BooleanField, Case, QuerySet, Value, When
from django.http import HttpRequest

from mrtrweb.people.roles import is_admin, is_operator

from .models import Connection, ToolExposure

SECRET_FIELDS = ("bearer_token", "headers")


class WriteOnlyTextarea(forms.Textarea):
    """Never renders a value, not even the one just posted with an error elsewhere."""

    def format_value(self, value: Any) -> None:
        return None


def _formfield(field: models.Field, **kwargs: Any) -> Any:
    if isinstance(field, models.URLField):
        # A server address typed without a scheme is meant to be reached over TLS.
        kwargs.setdefault("assume_scheme", "https")
    return field.formfield(**kwargs)


class ConnectionAdminForm(forms.ModelForm):
    new_bearer_token = forms.CharField(
        label="New bearer token",
        required=False,
        strip=True,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="Write-only. Leave empty to keep the current token.",
    )
    clear_bearer_token = forms.BooleanField(label="Remove the bearer token", required=False)
    new_headers = forms.JSONField(
        label="New custom headers",
        required=False,
        widget=WriteOnlyTextarea(attrs={"rows": 3, "autocomplete": "off"}),
        help_text='Write-only. A JSON object of names to values, e.g. {"X-Example": "…"}; '
        "replaces every custom header. Leave empty to keep the current ones.",
    )
    clear_headers = forms.BooleanField(label="Remove the custom headers", required=False)

    class Meta:
        model = Connection
        # Everything an operator sets; the secrets have their write-only fields above, and the
        # catalog is the server's to fill.
        fields = (
            "name",
            "title",
            "url",
            "enabled",
            "connect_timeout",
            "read_timeout",
            "max_response_bytes",
            "state_lifetime",
            "max_rounds",
            "answer_deadline",
            "answer_deadline_max",
            "era",
            "routing",
            "route_user",
            "route_group",
        )
        formfield_callback = _formfield

    def clean_new_headers(self) -> Any:
        headers = self.cleaned_data.get("new_headers")
        if headers in (None, ""):
            return None
        if not isinstance(headers, dict) or not all(
            isinstance(k, str) and k and isinstance(v, str) for k, v in headers.items()
        ):
            raise forms.ValidationError("Give a JSON object of header names to text values.")
        return headers

    def save(self, commit: bool = True) -> Connection:
        connection = super().save(commit=False)
        data = self.cleaned_data
        if data.get("clear_bearer_token"):
            connection.bearer_token = ""
        elif data.get("new_bearer_token"):
            connection.bearer_token = data["new_bearer_token"]
        if data.get("clear_headers"):
            connection.headers = None
        elif data.get("new_headers"):
            connection.headers = data["new_headers"]
        if commit:
            connection.save()
            self.save_m2m()
        return connection


class ToolExposureInline(admin.TabularInline):
    model = ToolExposure
    extra = 0
    fields = ("tool_name", "exposed", "routing", "route_user", "route_group")
    raw_id_fields = ("route_user",)


class _OperatorsEdit:
    """Operators (``servers.manage_connections``) edit; admins may look; nobody deletes."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return is_operator(request.user) or super().has_add_permission(request)  # type: ignore[misc]

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return is_operator(request.user) or super().has_change_permission(request, obj)  # type: ignore[misc]

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return (
            is_operator(request.user)
            or is_admin(request.user)
            or super().has_view_permission(request, obj)  # type: ignore[misc]
        )

    def has_module_permission(self, request: HttpRequest) -> bool:
        return (
            is_operator(request.user)
            or is_admin(request.user)
            or super().has_module_permission(request)  # type: ignore[misc]
        )


class ToolExposureInlineForOperators(_OperatorsEdit, ToolExposureInline):
    pass


@admin.register(Connection)
class ConnectionAdmin(_OperatorsEdit, admin.ModelAdmin):
    form = ConnectionAdminForm
    inlines = (ToolExposureInlineForOperators,)
    list_display = (
        "name",
        "title",
        "url",
        "enabled",
        "era",
        "routing",
        "max_rounds",
        "token_status",
        "catalog_fetched_at",
    )
    list_filter = ("enabled", "era", "routing")
    search_fields = ("name", "title", "url")
    readonly_fields = ("token_status", "headers_status", "catalog_summary", "created_at")
    fieldsets = (
        (None, {"fields": ("name", "title", "url", "enabled")}),
        (
            "Secrets (write-only)",
            {
                "fields": (
                    "token_status",
                    "new_bearer_token",
                    "clear_bearer_token",
                    "headers_status",
                    "new_headers",
                    "clear_headers",
                )
            },
        ),
        (
            "Limits",
            {
                "fields": (
                    "connect_timeout",
                    "read_timeout",
                    "max_response_bytes",
                    "state_lifetime",
                    "max_rounds",
                    "answer_deadline",
                    "answer_deadline_max",
                )
            },
        ),
        ("Routing", {"fields": ("routing", "route_user", "route_group")}),
        ("Catalog", {"fields": ("era", "catalog_summary", "created_at")}),
    )
    raw_id_fields = ("route_user",)

    def formfield_for_dbfield(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        if isinstance(db_field, models.URLField):
            kwargs.setdefault("assume_scheme", "https")
        return super().formfield_for_dbfield(db_field, request, **kwargs)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Connection]:
        # Whether a secret is set, from the stored column ("" and NULL are stored unencrypted).
        return (
            super()
            .get_queryset(request)
            .defer(*SECRET_FIELDS, "catalog")
            .annotate(
                token_is_set=Case(
                    When(bearer_token="", then=Value(False)),
                    default=Value(True),
                    output_field=BooleanField(),
                ),
                headers_are_set=Case(
                    When(headers__isnull=True, then=Value(False)),
                    default=Value(True),
                    output_field=BooleanField(),
                ),
            )
        )

    @admin.display(description="bearer token", boolean=False)
    def token_status(self, obj: Connection) -> str:
        return "set" if getattr(obj, "token_is_set", False) else "not set"

    @admin.display(description="custom headers")
    def headers_status(self, obj: Connection) -> str:
        return "set" if getattr(obj, "headers_are_set", False) else "not set"

    @admin.display(description="catalog")
    def catalog_summary(self, obj: Connection) -> str:
        if obj.catalog_fetched_at is None:
            return "not listed yet"
        catalog = Connection.objects.filter(pk=obj.pk).values_list("catalog", flat=True).first()
        catalog = catalog if isinstance(catalog, dict) else {}
        parts = [
            f"{len(catalog.get(kind) or [])} {kind.replace('_', ' ')}"
            for kind in ("tools", "prompts", "resources", "resource_templates")
        ]
        return f"{', '.join(parts)}; listed {obj.catalog_fetched_at:%Y-%m-%d %H:%M %Z}"


@admin.register(ToolExposure)
class ToolExposureAdmin(_OperatorsEdit, admin.ModelAdmin):
    list_display = ("tool_name", "connection", "exposed", "routing", "route_user", "route_group")
    list_filter = ("exposed", "routing", "connection")
    search_fields = ("tool_name", "connection__name")
    list_select_related = ("connection", "route_user", "route_group")
    fields = ("connection", "tool_name", "exposed", "routing", "route_user", "route_group")
    raw_id_fields = ("route_user",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[ToolExposure]:
        return (
            super()
            .get_queryset(request)
            .defer("connection__bearer_token", "connection__headers", "connection__catalog")
        )
