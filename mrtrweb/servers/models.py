"""MCP server connections: where a server is, how to authenticate, and its cached catalog."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import mcp_types
from django.conf import settings
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from mrtrweb.encryption.fields import EncryptedJSONField, EncryptedTextField
from mrtrweb.mcp import ConnectionSettings
from mrtrweb.mcp.config import DEFAULT_ANSWER_DEADLINE, DEFAULT_ANSWER_DEADLINE_MAX
from mrtrweb.mcp.handshake import DEFAULT_QUESTION_DEADLINE

DEFAULT_STATE_LIFETIME = timedelta(minutes=10)


class Routing(models.TextChoices):
    """Who is asked when a call on a connection (or one tool) needs input."""

    CALLER = "caller", _("whoever started the call")
    USER = "user", _("a named user")
    GROUP = "group", _("a group (members claim the round)")


class RoutingTarget(models.Model):
    """A routing policy: a connection's default, or one tool's override."""

    routing = models.CharField(max_length=8, choices=Routing.choices, default=Routing.CALLER)
    route_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    route_group = models.ForeignKey(
        Group, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        abstract = True

    def clean(self) -> None:
        if self.routing == Routing.USER and self.route_user is None:
            raise ValidationError({"route_user": _("Name the user the rounds go to.")})
        if self.routing == Routing.GROUP and self.route_group is None:
            raise ValidationError({"route_group": _("Name the group the rounds go to.")})


class Connection(RoutingTarget):
    """One MCP server endpoint that calls can be started on.

    The bearer token and the custom headers are secrets: they are stored
    encrypted and only ever leave the database towards the server itself.
    """

    class Auth(models.TextChoices):
        # How calls authenticate (docs/operator-guide.md, "Authentication"). OAuth per person
        # is the default: a server that never answers 401 needs nothing, and one that does
        # asks each person to connect their own account the first time they need it.
        NONE = "none", _("none")
        HEADER = "header", _("a static header or bearer token")
        OAUTH_PERSON = "oauth-person", _("OAuth, per person")
        OAUTH_SHARED = "oauth-shared", _("OAuth, shared (an operator connects once)")
        CLIENT_CREDENTIALS = "client-credentials", _("OAuth client credentials (no person)")

    class Era(models.TextChoices):
        UNKNOWN = "", _("not yet probed")
        MODERN = "modern", "2026-07-28"
        LEGACY = "legacy", _("handshake era (2025-11-25 or older)")

    name = models.SlugField(max_length=64, unique=True)
    title = models.CharField(max_length=200, blank=True)
    url = models.URLField(max_length=2000)
    enabled = models.BooleanField(default=True)
    auth = models.CharField(max_length=32, choices=Auth.choices, default=Auth.OAUTH_PERSON)
    # A static bearer token (`auth` HEADER); with OAuth, the authorization's token replaces it.
    bearer_token = EncryptedTextField(blank=True, default="")
    # Custom headers go with every request, whatever `auth` is.
    headers = EncryptedJSONField(blank=True, null=True)
    # OAuth: credentials an operator registered with the authorization server beforehand
    # (pre-registration), or the client-credentials identity; empty means "register".
    oauth_client_id = models.CharField(max_length=2000, blank=True, default="")
    oauth_client_secret = EncryptedTextField(blank=True, default="")
    # A PEM private key for private_key_jwt client authentication (client credentials).
    oauth_private_key = EncryptedTextField(blank=True, default="")
    # Space-separated scopes to ask for when the server names none (client credentials).
    oauth_scopes = models.CharField(max_length=2000, blank=True, default="")
    # OAuth requests go where the server and its authorization server point, held to the
    # address rules (public addresses only) but for the connection's own origin and what an
    # operator allows here: host names and IP networks, one a line (mrtrweb.netguard).
    oauth_allowed_hosts = models.TextField(blank=True, default="")
    # The last time this connection's sign-in could not be set up (discovery failed), and why
    # in full: operators read it, end users are told to ask them; kept a few minutes so a
    # page view does not fetch again (authorizations.flow.discovery_for).
    oauth_failed_at = models.DateTimeField(null=True, blank=True)
    oauth_failure = models.TextField(blank=True, default="")
    connect_timeout = models.FloatField(default=10.0, validators=[MinValueValidator(0.1)])
    read_timeout = models.FloatField(default=60.0, validators=[MinValueValidator(0.1)])
    max_response_bytes = models.PositiveIntegerField(default=10_000_000)
    state_lifetime = models.DurationField(
        default=DEFAULT_STATE_LIFETIME,
        help_text="How long the server keeps a round's requestState valid.",
    )
    max_rounds = models.PositiveSmallIntegerField(default=10, validators=[MinValueValidator(1)])
    # Across the whole answer, unlike read_timeout (per chunk): a server that only sends
    # keep-alives is stopped; progress notifications extend it, up to the max.
    answer_deadline = models.FloatField(
        default=DEFAULT_ANSWER_DEADLINE,
        validators=[MinValueValidator(0.1)],
        help_text="Seconds the server has to answer a request (with a result or a question).",
    )
    answer_deadline_max = models.FloatField(
        default=DEFAULT_ANSWER_DEADLINE_MAX,
        validators=[MinValueValidator(0.1)],
        help_text="The longest progress notifications may extend that to, in seconds.",
    )
    era = models.CharField(max_length=16, choices=Era.choices, blank=True, default="")
    # Handshake-era servers hold a call's stream open while a person answers its question:
    # how long they are given before mrtrweb answers "cancel" (the round's "answer before").
    question_deadline = models.FloatField(
        default=DEFAULT_QUESTION_DEADLINE,
        validators=[MinValueValidator(1.0)],
        help_text="Seconds a person has to answer a handshake-era server's question.",
    )

    # The catalog as last listed; re-listed once `catalog_expires_at` passes (the server's ttlMs).
    catalog = models.JSONField(default=dict, blank=True)
    catalog_fetched_at = models.DateTimeField(null=True, blank=True)
    catalog_expires_at = models.DateTimeField(null=True, blank=True)

    # The last test (any listing of the catalog: an operator's test, or a refresh): when, and
    # what failed ("" when it passed). End users are offered only a connection whose last test
    # passed (servers/exposure.py: offered_connections); operators see the rest with the reason.
    tested_at = models.DateTimeField(null=True, blank=True)
    test_failure = models.CharField(max_length=500, blank=True, default="")

    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        permissions = [("manage_connections", "Can manage server connections and exposure")]

    def __str__(self) -> str:
        return self.title or self.name

    def get_absolute_url(self) -> str:
        return reverse("starting:start", kwargs={"connection": self.name})

    def clean(self) -> None:
        super().clean()
        if (
            self.answer_deadline is not None
            and self.answer_deadline_max is not None
            and self.answer_deadline_max < self.answer_deadline
        ):
            raise ValidationError(
                {"answer_deadline_max": "At least the answer deadline: progress only extends it."}
            )

    def credentials(self) -> dict[str, Any]:
        """The secrets a call starts with; its later rounds are sent with the same ones.

        OAuth tokens are not among them: they are the caller's (or the connection's), kept
        in ``mrtrweb.authorizations`` and refreshed there, so they are read at each send.
        """
        return {"bearer_token": self.bearer_token or "", "headers": dict(self.headers or {})}

    @property
    def uses_oauth(self) -> bool:
        return self.auth in (
            self.Auth.OAUTH_PERSON,
            self.Auth.OAUTH_SHARED,
            self.Auth.CLIENT_CREDENTIALS,
        )

    def client_settings(self, credentials: dict[str, Any] | None = None) -> ConnectionSettings:
        """How to reach the server, with ``credentials`` (a call's snapshot) if given."""
        secrets = credentials if credentials is not None else self.credentials()
        return ConnectionSettings(
            url=self.url,
            headers=dict(secrets.get("headers") or {}),
            bearer_token=secrets.get("bearer_token") or None,
            connect_timeout=self.connect_timeout,
            read_timeout=self.read_timeout,
            max_response_bytes=self.max_response_bytes,
            max_json_depth=settings.MRTRWEB_MAX_JSON_DEPTH,
            answer_deadline=self.answer_deadline,
            answer_deadline_max=max(self.answer_deadline_max, self.answer_deadline),
        )

    @property
    def passed_its_test(self) -> bool:
        return self.tested_at is not None and not self.test_failure

    @property
    def not_offered_reason(self) -> str:
        """Why end users are not offered this connection ("" when they are, as far as its
        tests go: they still need an exposed tool)."""
        if not self.enabled:
            return "It is switched off."
        if self.tested_at is None:
            return "It was never tested. Test it in the console."
        if self.test_failure:
            return f"Its last test failed: {self.test_failure}"
        return ""

    # -- the catalog ----------------------------------------------------------------------

    def catalog_is_fresh(self) -> bool:
        return self.catalog_expires_at is not None and self.catalog_expires_at > timezone.now()

    def tools(self) -> list[mcp_types.Tool]:
        return [mcp_types.Tool.model_validate(t) for t in self.catalog.get("tools", [])]

    def tool(self, name: str) -> mcp_types.Tool | None:
        for raw in self.catalog.get("tools", []):
            if raw.get("name") == name:
                return mcp_types.Tool.model_validate(raw)
        return None

    def server_info(self) -> dict[str, Any]:
        return dict(self.catalog.get("server", {}))


class ToolExposure(RoutingTarget):
    """Per tool: may end users start it, and who answers its rounds (overrides the connection).

    ``routing`` left empty means "as the connection says".
    """

    connection = models.ForeignKey(Connection, on_delete=models.CASCADE, related_name="exposures")
    tool_name = models.CharField(max_length=2000)
    exposed = models.BooleanField(default=False, help_text="End users may start this tool.")
    routing = models.CharField(max_length=8, choices=Routing.choices, blank=True, default="")

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["connection", "tool_name"], name="one_exposure_per_tool"
            )
        ]

    def __str__(self) -> str:
        return f"{self.tool_name} on {self.connection.name}"
