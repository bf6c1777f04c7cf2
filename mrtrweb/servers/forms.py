"""The operators' form of a connection (with write-only secrets); one tool's exposure is
:mod:`.exposure_form`'s.

Secrets never travel back to the browser: the token and header fields always render empty,
even when the form is shown again with errors, and no validation message repeats them.
"""

from __future__ import annotations

from datetime import timedelta
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, cast
from urllib.parse import urlsplit

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives.serialization import load_pem_private_key
from django import forms
from django.contrib.auth.models import Group
from django.core.validators import MinValueValidator, URLValidator
from django.db import models
from django.utils.translation import gettext_lazy as _

from mrtrweb.netguard import InvalidAllowance, parse_allowance

from .headers import HEADER_VALUE, HeaderError, parse_headers
from .models import DEFAULT_QUESTION_DEADLINE, Connection
from .routing_fields import RouteUserField, apply_routing

# The modes as the console offers them (shorter than the model's, and no label contains
# another field's: "Bearer token" stays the token field's alone).
AUTH_CHOICES = [
    (Connection.Auth.NONE, "None"),
    (Connection.Auth.HEADER, "A static token or headers"),
    (Connection.Auth.OAUTH_PERSON, "OAuth: each person connects their own account"),
    (Connection.Auth.OAUTH_SHARED, "OAuth: one shared account, connected by an operator"),
    (Connection.Auth.CLIENT_CREDENTIALS, "OAuth client credentials (no person)"),
]

AUTH_HELP = (
    "None: the server asks for nothing. A static token or headers: the bearer token or "
    "custom headers below go with every request. Each person: people connect their own "
    "account at the server's authorization server the first time a call needs it (the "
    "default; a server that never asks needs nothing). Shared: an operator connects one "
    "account that every call uses. Client credentials: mrtrweb gets tokens with the client "
    "ID below, no person involved."
)

# The longest a server could sensibly keep a round's state: 30 days.
MAX_STATE_MINUTES = Decimal(30 * 24 * 60)


class SecretTextarea(forms.Textarea):
    """A textarea that never renders its value (the headers are write-only)."""

    def format_value(self, value: Any) -> None:
        return None


def _secret_input() -> forms.PasswordInput:
    return forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"})


def _formfield(db_field: models.Field, **kwargs: Any) -> forms.Field | None:
    if isinstance(db_field, models.URLField):
        kwargs["assume_scheme"] = "https"
    return db_field.formfield(**kwargs)


class ConnectionForm(forms.ModelForm):
    required_css_class = "required"

    state_lifetime = forms.DecimalField(
        label=_("State lifetime (minutes)"),
        min_value=Decimal("0.05"),
        max_value=MAX_STATE_MINUTES,
        max_digits=9,
        decimal_places=2,
        help_text=_(
            "How long the server keeps a round's requestState valid; answers must arrive within it."
        ),
        widget=forms.NumberInput(attrs={"step": "any"}),
    )
    route_user = RouteUserField(help_text=_("With “a named user”: the username."))
    bearer_token = forms.CharField(
        label=_("Bearer token"),
        required=False,
        strip=True,
        widget=_secret_input(),
        help_text=_("Sent as “Authorization: Bearer …”. Leave empty to keep the stored token."),
    )
    clear_token = forms.BooleanField(label=_("Remove the stored token"), required=False)
    headers = forms.CharField(
        label=_("Custom headers"),
        required=False,
        widget=SecretTextarea(attrs={"rows": 3, "spellcheck": "false", "autocomplete": "off"}),
        help_text=_(
            "One “Name: value” per line. Replaces every stored header; leave empty to keep them."
        ),
    )
    clear_headers = forms.BooleanField(label=_("Remove the stored headers"), required=False)
    oauth_client_secret = forms.CharField(
        label=_("Client secret"),
        required=False,
        strip=True,
        widget=_secret_input(),
        help_text=_(
            "With a pre-registered client or client credentials, if the authorization "
            "server gave one. Leave empty to keep the stored secret."
        ),
    )
    clear_client_secret = forms.BooleanField(
        label=_("Remove the stored client secret"), required=False
    )
    oauth_private_key = forms.CharField(
        label=_("Private key (PEM)"),
        required=False,
        strip=True,
        widget=SecretTextarea(attrs={"rows": 4, "spellcheck": "false", "autocomplete": "off"}),
        help_text=_(
            "Client credentials only: signs a JWT instead of sending a secret "
            "(private_key_jwt). Leave empty to keep the stored key."
        ),
    )
    clear_private_key = forms.BooleanField(label=_("Remove the stored private key"), required=False)

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
            "question_deadline",
            "routing",
            "route_group",
            "auth",
            "oauth_client_id",
            "oauth_scopes",
            "oauth_allowed_hosts",
        ]
        widgets = {
            "auth": forms.RadioSelect,
            "oauth_allowed_hosts": forms.Textarea(attrs={"rows": 3, "spellcheck": "false"}),
        }
        labels = {
            "name": "Name",
            "url": "URL",
            "connect_timeout": "Connect timeout (seconds)",
            "read_timeout": "Read timeout (seconds)",
            "max_response_bytes": "Max response size (bytes)",
            "max_rounds": "Round cap",
            "answer_deadline": "Answer deadline (seconds)",
            "answer_deadline_max": "Longest answer with progress (seconds)",
            "question_deadline": _("Question deadline (seconds)"),
            "routing": "Who answers the rounds",
            "route_group": "Group",
            "auth": "How mrtrweb authenticates",
            "oauth_client_id": "Client ID",
            "oauth_scopes": "Scopes",
            "oauth_allowed_hosts": _("Addresses OAuth may reach"),
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
            "question_deadline": _(
                "Servers of the older protocol (2025-11-25 and before) hold the call open while "
                "a person answers their question: how long they are given before mrtrweb "
                "answers “cancel”. Shown as the round's “answer before”."
            ),
            "route_group": "With “a group”: its members claim the rounds.",
            "oauth_client_id": "Registered with the authorization server beforehand. Needed for "
            "client credentials; with OAuth per person or shared, only if the server offers "
            "neither client ID metadata documents nor dynamic registration.",
            "oauth_scopes": "Space-separated, for client credentials when the server names "
            "none. People are asked for the scopes the server names.",
            "oauth_allowed_hosts": _(
                "The server and its authorization server name the addresses mrtrweb fetches "
                "to set up sign-in. Besides this server's own origin, only public addresses "
                "are fetched. Host names or IP networks allowed too (such as "
                "auth.internal.example or 10.20.0.0/16), one a line."
            ),
        }

    field_order = [
        "name",
        "title",
        "url",
        "auth",
        "bearer_token",
        "clear_token",
        "headers",
        "clear_headers",
        "oauth_client_id",
        "oauth_client_secret",
        "clear_client_secret",
        "oauth_private_key",
        "clear_private_key",
        "oauth_scopes",
        "oauth_allowed_hosts",
        "connect_timeout",
        "read_timeout",
        "max_response_bytes",
        "state_lifetime",
        "max_rounds",
        "answer_deadline",
        "answer_deadline_max",
        "question_deadline",
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
        # Left empty (or not posted, by a client of the API written before it), the default.
        self.fields["question_deadline"].required = False
        route_group = cast(forms.ModelChoiceField, self.fields["route_group"])
        route_group.queryset = Group.objects.order_by("name")
        self.fields["route_group"].required = False
        self.initial.setdefault("state_lifetime", lifetime_minutes(instance.state_lifetime))
        self.initial.setdefault("route_user", instance.route_user)
        if not (self.editing and instance.bearer_token):
            del self.fields["clear_token"]
        if not (self.editing and instance.headers):
            del self.fields["clear_headers"]
        if not (self.editing and instance.oauth_client_secret):
            del self.fields["clear_client_secret"]
        if not (self.editing and instance.oauth_private_key):
            del self.fields["clear_private_key"]
        self.fields["auth"].help_text = AUTH_HELP
        cast(forms.ChoiceField, self.fields["auth"]).choices = AUTH_CHOICES
        # The API posts this form without the fields it does not know (see _check_auth).
        self.fields["auth"].required = False
        cast(forms.CharField, self.fields["oauth_client_id"]).max_length = 2000

    # -- what the template says about the stored secrets (never their values) ----------

    @property
    def token_is_set(self) -> bool:
        return bool(self.editing and self.instance.bearer_token)

    @property
    def client_secret_is_set(self) -> bool:
        return bool(self.editing and self.instance.oauth_client_secret)

    @property
    def private_key_is_set(self) -> bool:
        return bool(self.editing and self.instance.oauth_private_key)

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
                _("Put credentials in the bearer token or a header, not in the URL."),
                code="userinfo",
            )
        return url

    def clean_bearer_token(self) -> str:
        token: str = self.cleaned_data["bearer_token"]
        if token and not HEADER_VALUE.match(token):
            raise forms.ValidationError(
                _("The token must be printable ASCII on one line."), code="token"
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

    def clean_oauth_client_secret(self) -> str:
        secret: str = self.cleaned_data["oauth_client_secret"]
        if secret and not HEADER_VALUE.match(secret):
            raise forms.ValidationError(
                _("The client secret must be printable ASCII on one line."), code="client_secret"
            )
        return secret

    def clean_oauth_private_key(self) -> str:
        pem: str = self.cleaned_data["oauth_private_key"]
        if not pem:
            return ""
        # A textarea posts CRLF line ends; PEM is stored as it is written, LF and a final LF.
        pem = "\n".join(line.strip() for line in pem.splitlines()) + "\n"
        try:
            load_pem_private_key(pem.encode("utf-8"), password=None)
        except (ValueError, TypeError, UnsupportedAlgorithm):
            # Says nothing of the text itself: it may be most of a key.
            raise forms.ValidationError(
                _("This is not an unencrypted PEM private key (RSA, EC or Ed25519)."),
                code="private_key",
            ) from None
        return pem

    def clean_oauth_scopes(self) -> str:
        return " ".join(self.cleaned_data["oauth_scopes"].split())

    def clean_oauth_allowed_hosts(self) -> str:
        try:
            names, networks = parse_allowance(self.cleaned_data["oauth_allowed_hosts"])
        except InvalidAllowance as exc:
            raise forms.ValidationError(str(exc), code="allowed_hosts") from None
        return "\n".join((*names, *networks))

    def clean_question_deadline(self) -> float:
        value = self.cleaned_data.get("question_deadline")
        if value is None:
            return self.instance.question_deadline or DEFAULT_QUESTION_DEADLINE
        return float(value)

    def clean_state_lifetime(self) -> timedelta:
        minutes: Decimal = self.cleaned_data["state_lifetime"]
        return timedelta(seconds=int((minutes * 60).to_integral_value(ROUND_HALF_UP)))

    def clean(self) -> dict[str, Any]:
        super().clean()
        cleaned = self.cleaned_data
        if cleaned.get("bearer_token") and cleaned.get("clear_token"):
            self.add_error("clear_token", "Either enter a new token or remove it, not both.")
        if cleaned.get("headers") and cleaned.get("clear_headers"):
            self.add_error("clear_headers", "Either enter new headers or remove them, not both.")
        pairs = [
            ("oauth_client_secret", "clear_client_secret", "client secret"),
            ("oauth_private_key", "clear_private_key", "private key"),
        ]
        for field, clear, what in pairs:
            if cleaned.get(field) and cleaned.get(clear):
                self.add_error(clear, f"Either enter a new {what} or remove it, not both.")
        self._check_auth(cleaned)
        apply_routing(self, cleaned)
        if "state_lifetime" in cleaned:
            self.instance.state_lifetime = cleaned["state_lifetime"]
        if {"url", "oauth_allowed_hosts"} & set(self.changed_data):
            # A sign-in that could not be set up is tried again under the new settings.
            self.instance.oauth_failed_at = None
        return cleaned

    def _kept(self, cleaned: dict[str, Any], field: str, clear: str) -> bool:
        """Whether the connection will hold this secret after saving (typed, or kept)."""
        if cleaned.get(field):
            return True
        stored = bool(self.editing and getattr(self.instance, field))
        return stored and not cleaned.get(clear)

    def _check_auth(self, cleaned: dict[str, Any]) -> None:
        """Each way of authenticating with the settings it needs, and none it would ignore.

        A post without ``auth`` (the API, which does not know it yet) keeps the connection's,
        or takes a static header when it brings a bearer token, and is checked no further.
        """
        Auth = Connection.Auth
        auth = cleaned.get("auth")
        if not auth:
            auth = Auth.HEADER if cleaned.get("bearer_token") else self.instance.auth
            cleaned["auth"] = self.instance.auth = auth
            return
        if auth != Auth.HEADER and cleaned.get("bearer_token"):
            self.add_error(
                "bearer_token",
                "A bearer token is only sent with “A static token or headers”.",
            )
        if auth == Auth.HEADER and not (
            self._kept(cleaned, "bearer_token", "clear_token")
            or self._kept(cleaned, "headers", "clear_headers")
        ):
            self.add_error("bearer_token", "Enter the token (or a custom header) to send.")
        client_id = cleaned.get("oauth_client_id") or ""
        if auth == Auth.CLIENT_CREDENTIALS:
            if not client_id:
                self.add_error("oauth_client_id", "Client credentials need the client ID.")
            elif not (
                self._kept(cleaned, "oauth_client_secret", "clear_client_secret")
                or self._kept(cleaned, "oauth_private_key", "clear_private_key")
            ):
                self.add_error(
                    "oauth_client_secret",
                    "Client credentials need the client secret or a private key.",
                )
        elif cleaned.get("oauth_private_key"):
            self.add_error(
                "oauth_private_key", "A private key is only used with client credentials."
            )
        if auth in (Auth.NONE, Auth.HEADER):
            if client_id:
                self.add_error("oauth_client_id", "A client ID is only used with OAuth.")
            if cleaned.get("oauth_client_secret"):
                self.add_error("oauth_client_secret", "A client secret is only used with OAuth.")
        elif cleaned.get("oauth_client_secret") and not client_id:
            self.add_error("oauth_client_secret", "A client secret goes with its client ID.")

    @property
    def secrets_were_typed(self) -> bool:
        """Whether the person typed a secret that an error page will not show back."""
        return any(
            self.data.get(name)
            for name in ("bearer_token", "headers", "oauth_client_secret", "oauth_private_key")
        )

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
        for field, clear, what, was_set in (
            (
                "oauth_client_secret",
                "clear_client_secret",
                "client secret",
                self.client_secret_is_set,
            ),
            ("oauth_private_key", "clear_private_key", "private key", self.private_key_is_set),
        ):
            if self.cleaned_data.get(field):
                changes.append(f"{what} replaced" if was_set else f"{what} set")
            elif self.cleaned_data.get(clear):
                changes.append(f"{what} removed")
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
        for field, clear in (
            ("oauth_client_secret", "clear_client_secret"),
            ("oauth_private_key", "clear_private_key"),
        ):
            if self.cleaned_data.get(field):
                setattr(connection, field, self.cleaned_data[field])
            elif self.cleaned_data.get(clear):
                setattr(connection, field, "")
        if commit:
            connection.save()
        return connection


def lifetime_minutes(lifetime: timedelta) -> Decimal:
    minutes = (Decimal(lifetime.total_seconds()) / 60).quantize(Decimal("0.01"), ROUND_HALF_UP)
    # 10, 1.5 and 0.25, never 10.00 nor normalize()'s 1E+1.
    if minutes == minutes.to_integral_value():
        return minutes.quantize(Decimal(1))
    return minutes.normalize()
