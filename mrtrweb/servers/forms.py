"""The operators' forms: a connection (with write-only secrets) and one tool's exposure.

Secrets never travel back to the browser: the token and header fields always render empty,
even when the form is shown again with errors, and no validation message repeats them.
"""

from __future__ import annotations

import hashlib
from datetime import timedelta
from decimal import ROUND_HALF_UP, Decimal
from typing import Any
from urllib.parse import urlsplit

from django import forms
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.validators import MinValueValidator, URLValidator
from django.db import models

from .headers import HEADER_VALUE, HeaderError, parse_headers
from .models import Connection, Routing, ToolExposure

# The longest a server could sensibly keep a round's state: 30 days.
MAX_STATE_MINUTES = Decimal(30 * 24 * 60)


class SecretTextarea(forms.Textarea):
    """A textarea that never renders its value (the headers are write-only)."""

    def format_value(self, value: Any) -> None:
        return None


def _secret_input() -> forms.PasswordInput:
    return forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"})


class RouteUserField(forms.CharField):
    """A user named by username (a text field, since a select of every user does not scale)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        kwargs.setdefault("max_length", 150)
        kwargs.setdefault("label", "User")
        kwargs.setdefault("widget", forms.TextInput(attrs={"list": "usernames"}))
        super().__init__(**kwargs)

    def prepare_value(self, value: Any) -> Any:
        return value.get_username() if hasattr(value, "get_username") else value

    def clean(self, value: Any) -> Any:
        username = super().clean(value)
        if not username:
            return None
        User = get_user_model()
        user = User.objects.filter(**{User.USERNAME_FIELD: username}, is_active=True).first()
        if user is None:
            raise forms.ValidationError("No active user has this username.", code="unknown_user")
        return user


def _apply_routing(form: forms.ModelForm, cleaned: dict[str, Any]) -> None:
    """Keep only the target the routing uses, so a stale user or group never lingers."""
    routing = cleaned.get("routing")
    user = cleaned.get("route_user") if routing == Routing.USER else None
    group = cleaned.get("route_group") if routing == Routing.GROUP else None
    cleaned["route_user"], cleaned["route_group"] = user, group
    # Set before ModelForm's own validation, which runs the model's clean() on the instance.
    form.instance.route_user = user
    form.instance.route_group = group


def _formfield(db_field: models.Field, **kwargs: Any) -> forms.Field | None:
    if isinstance(db_field, models.URLField):
        kwargs["assume_scheme"] = "https"
    return db_field.formfield(**kwargs)


class ConnectionForm(forms.ModelForm):
    required_css_class = "required"

    state_lifetime = forms.DecimalField(
        label="State lifetime (minutes)",
        min_value=Decimal("0.05"),
        max_value=MAX_STATE_MINUTES,
        max_digits=9,
        decimal_places=2,
        help_text="How long the server keeps a round's requestState valid; answers must "
        "arrive within it.",
        widget=forms.NumberInput(attrs={"step": "any"}),
    )
    route_user = RouteUserField(help_text="With “a named user”: the username.")
    bearer_token = forms.CharField(
        label="Bearer token",
        required=False,
        strip=True,
        widget=_secret_input(),
        help_text="Sent as “Authorization: Bearer …”. Leave empty to keep the stored token.",
    )
    clear_token = forms.BooleanField(label="Remove the stored token", required=False)
    headers = forms.CharField(
        label="Custom headers",
        required=False,
        widget=SecretTextarea(attrs={"rows": 3, "spellcheck": "false", "autocomplete": "off"}),
        help_text="One “Name: value” per line. Replaces every stored header; "
        "leave empty to keep them.",
    )
    clear_headers = forms.BooleanField(label="Remove the stored headers", required=False)

    class Meta:
        model = Connection
        formfield_callback = _formfield
        fields = [
            "name",
            "title",
            "url",
            "connect_timeout",
            "read_timeout",
            "max_response_bytes",
            "max_rounds",
            "answer_deadline",
            "answer_deadline_max",
            "routing",
            "route_group",
        ]
        labels = {
            "name": "Name",
            "url": "URL",
            "connect_timeout": "Connect timeout (seconds)",
            "read_timeout": "Read timeout (seconds)",
            "max_response_bytes": "Max response size (bytes)",
            "max_rounds": "Round cap",
            "answer_deadline": "Answer deadline (seconds)",
            "answer_deadline_max": "Longest answer with progress (seconds)",
            "routing": "Who answers the rounds",
            "route_group": "Group",
        }
        help_texts = {
            "name": "Letters, digits, - and _; part of page addresses, so it cannot change later.",
            "title": "A friendlier name shown to people.",
            "url": "The MCP endpoint, e.g. https://mcp.example.com/mcp.",
            "max_rounds": "Input rounds one call may take before it is stopped.",
            "answer_deadline": "How long the server has to answer a request, with a result or "
            "a question, however it keeps the connection alive.",
            "answer_deadline_max": "Each progress notification gives the server the answer "
            "deadline again, up to this.",
            "route_group": "With “a group”: its members claim the rounds.",
        }

    field_order = [
        "name",
        "title",
        "url",
        "bearer_token",
        "clear_token",
        "headers",
        "clear_headers",
        "connect_timeout",
        "read_timeout",
        "max_response_bytes",
        "state_lifetime",
        "max_rounds",
        "answer_deadline",
        "answer_deadline_max",
        "routing",
        "route_user",
        "route_group",
    ]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("label_suffix", "")
        super().__init__(*args, **kwargs)
        instance: Connection = self.instance
        self.editing = instance.pk is not None
        if self.editing:
            self.fields["name"].disabled = True
            self.fields["name"].help_text = "Part of page addresses; it cannot change."
        self.fields["url"].validators = [URLValidator(schemes=["http", "https"])]
        self.fields["max_response_bytes"].validators.append(MinValueValidator(1024))
        self.fields["max_response_bytes"].widget.attrs["min"] = 1024
        self.fields["route_group"].queryset = Group.objects.order_by("name")
        self.fields["route_group"].required = False
        self.initial.setdefault("state_lifetime", lifetime_minutes(instance.state_lifetime))
        self.initial.setdefault("route_user", instance.route_user)
        if not (self.editing and instance.bearer_token):
            del self.fields["clear_token"]
        if not (self.editing and instance.headers):
            del self.fields["clear_headers"]

    # -- what the template says about the stored secrets (never their values) ----------

    @property
    def token_is_set(self) -> bool:
        return bool(self.editing and self.instance.bearer_token)

    @property
    def header_names(self) -> list[str]:
        return sorted((self.instance.headers or {}).keys()) if self.editing else []

    # -- validation --------------------------------------------------------------------

    def clean_url(self) -> str:
        url: str = self.cleaned_data["url"]
        parts = urlsplit(url)
        if parts.username is not None or parts.password is not None:
            # Addresses are shown on pages; credentials belong in the token or the headers.
            raise forms.ValidationError(
                "Put credentials in the bearer token or a header, not in the URL.",
                code="userinfo",
            )
        return url

    def clean_bearer_token(self) -> str:
        token: str = self.cleaned_data["bearer_token"]
        if token and not HEADER_VALUE.match(token):
            raise forms.ValidationError(
                "The token must be printable ASCII on one line.", code="token"
            )
        return token

    def clean_headers(self) -> dict[str, str] | None:
        text: str = self.cleaned_data["headers"]
        if not text.strip():
            return None
        try:
            return parse_headers(
                text.splitlines(), token_hint="the bearer token field", line_numbers=True
            )
        except HeaderError as exc:
            raise forms.ValidationError(str(exc), code=exc.code) from None

    def clean_state_lifetime(self) -> timedelta:
        minutes: Decimal = self.cleaned_data["state_lifetime"]
        return timedelta(seconds=int((minutes * 60).to_integral_value(ROUND_HALF_UP)))

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        if cleaned.get("bearer_token") and cleaned.get("clear_token"):
            self.add_error("clear_token", "Either enter a new token or remove it, not both.")
        if cleaned.get("headers") and cleaned.get("clear_headers"):
            self.add_error("clear_headers", "Either enter new headers or remove them, not both.")
        _apply_routing(self, cleaned)
        if "state_lifetime" in cleaned:
            self.instance.state_lifetime = cleaned["state_lifetime"]
        return cleaned

    @property
    def secrets_were_typed(self) -> bool:
        """Whether the person typed a secret that an error page will not show back."""
        return bool(self.data.get("bearer_token") or self.data.get("headers"))

    # -- saving ------------------------------------------------------------------------

    def secret_changes(self) -> list[str]:
        """What happens to the secrets on save, in words fit for a log line."""
        changes = []
        if self.cleaned_data.get("bearer_token"):
            changes.append("token replaced" if self.token_is_set else "token set")
        elif self.cleaned_data.get("clear_token"):
            changes.append("token removed")
        if self.cleaned_data.get("headers"):
            changes.append("headers replaced" if self.header_names else "headers set")
        elif self.cleaned_data.get("clear_headers"):
            changes.append("headers removed")
        return changes

    def save(self, commit: bool = True) -> Connection:
        connection: Connection = super().save(commit=False)
        if self.cleaned_data.get("bearer_token"):
            connection.bearer_token = self.cleaned_data["bearer_token"]
        elif self.cleaned_data.get("clear_token"):
            connection.bearer_token = ""
        if self.cleaned_data.get("headers"):
            connection.headers = self.cleaned_data["headers"]
        elif self.cleaned_data.get("clear_headers"):
            connection.headers = None
        if commit:
            connection.save()
        return connection


def lifetime_minutes(lifetime: timedelta) -> Decimal:
    minutes = (Decimal(lifetime.total_seconds()) / 60).quantize(Decimal("0.01"), ROUND_HALF_UP)
    # 10, 1.5 and 0.25, never 10.00 nor normalize()'s 1E+1.
    if minutes == minutes.to_integral_value():
        return minutes.quantize(Decimal(1))
    return minutes.normalize()


# -- exposure ----------------------------------------------------------------------------


EXPOSURE_ROUTING = [("", "as the connection says"), *Routing.choices]


class ExposureForm(forms.ModelForm):
    """One tool's row on the exposure page."""

    required_css_class = "required"

    tool = forms.CharField(widget=forms.HiddenInput, max_length=2000)
    route_user = RouteUserField()

    class Meta:
        model = ToolExposure
        fields = ["exposed", "routing", "route_group"]
        labels = {
            "exposed": "End users may start it",
            "routing": "Who answers",
            "route_group": "Group",
        }

    def __init__(self, *args: Any, tool_name: str, **kwargs: Any) -> None:
        digest = hashlib.sha256(tool_name.encode("utf-8")).hexdigest()[:10]
        kwargs.setdefault("auto_id", f"tool-{digest}-%s")
        kwargs.setdefault("label_suffix", "")
        super().__init__(*args, **kwargs)
        self.tool_name = tool_name
        self.row_id = f"tool-{digest}"
        self.initial["tool"] = tool_name
        self.initial.setdefault("route_user", self.instance.route_user)
        self.fields["routing"].choices = EXPOSURE_ROUTING
        self.fields["routing"].required = False
        self.fields["route_group"].queryset = Group.objects.order_by("name")
        self.fields["route_group"].required = False

    def clean_tool(self) -> str:
        if self.cleaned_data["tool"] != self.tool_name:
            raise forms.ValidationError("The form is for another tool.", code="tool")
        return self.tool_name

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        _apply_routing(self, cleaned)
        return cleaned
