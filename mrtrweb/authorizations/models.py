"""What OAuth left behind for each connection: discovery, client records and authorizations.

Every token, client secret and PKCE verifier is encrypted at rest with the keys that protect the
other secrets (``mrtrweb.encryption``), so ``rotate_secrets`` re-encrypts them too.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from mrtrweb.encryption.fields import EncryptedJSONField, EncryptedTextField
from mrtrweb.servers.models import Connection


class Discovery(models.Model):
    """The last discovery for a connection: its protected resource and authorization server."""

    connection = models.OneToOneField(
        Connection, on_delete=models.CASCADE, related_name="oauth_discovery"
    )
    # The `resource` exactly as the protected resource metadata publishes it (RFC 8707).
    resource = models.CharField(max_length=2000)
    issuer = models.CharField(max_length=2000)
    # mrtrweb.oauth.Discovery.to_json(): both metadata documents as fetched (nothing secret).
    document = models.JSONField(default=dict)
    discovered_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"{self.connection}: {self.issuer}"


class ClientRegistration(models.Model):
    """mrtrweb's client identity at one authorization server, for one connection.

    A record belongs to one issuer: when a server moves to another authorization server,
    mrtrweb registers again rather than presenting one issuer's client to another.
    """

    class Via(models.TextChoices):
        METADATA_DOCUMENT = "metadata-document", "client ID metadata document"
        PRE_REGISTERED = "pre-registered", "pre-registered by an operator"
        DYNAMIC = "dynamic", "dynamic client registration"
        CLIENT_CREDENTIALS = "client-credentials", "client credentials"

    connection = models.ForeignKey(
        Connection, on_delete=models.CASCADE, related_name="oauth_clients"
    )
    issuer = models.CharField(max_length=2000)
    client_id = models.CharField(max_length=2000)
    client_secret = EncryptedTextField(blank=True, default="")
    token_endpoint_auth_method = models.CharField(max_length=64, default="none")
    registered_via = models.CharField(max_length=32, choices=Via.choices)
    # The registration response without its secret (mrtrweb.oauth.ClientIdentity.to_json()).
    document = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["connection", "issuer"], name="oauth_client_one_per_issuer"
            )
        ]

    def __str__(self) -> str:
        return f"{self.client_id} at {self.issuer}"


class Authorization(models.Model):
    """Tokens for one connection: a person's own (per person), or the connection's.

    ``version`` grows with every token change: a refresh writes only if the version is still the
    one it read, so two processes refreshing at once never lose the newer refresh token.
    """

    class Kind(models.TextChoices):
        PERSON = "person", "a person's own account"
        SHARED = "shared", "shared by the connection"
        CLIENT_CREDENTIALS = "client-credentials", "client credentials"

    class Status(models.TextChoices):
        ACTIVE = "active", "connected"
        # The refresh failed or the server refused the token: the person must connect again.
        RECONNECT = "reconnect", "must connect again"

    connection = models.ForeignKey(
        Connection, on_delete=models.CASCADE, related_name="oauth_authorizations"
    )
    # NULL for the connection's own authorization (shared, client credentials).
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="oauth_authorizations",
    )
    kind = models.CharField(max_length=32, choices=Kind.choices)
    client = models.ForeignKey(
        ClientRegistration, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    issuer = models.CharField(max_length=2000)
    # Space-separated, as granted (or as asked when the token response omits them).
    scopes = models.CharField(max_length=2000, blank=True, default="")
    token_type = models.CharField(max_length=32, default="Bearer")
    access_token = EncryptedTextField(blank=True, default="")
    refresh_token = EncryptedTextField(blank=True, default="")
    expires_at = models.DateTimeField(null=True, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    # Why a reconnect is needed, in words for people (never a token or a server's raw body).
    reason = models.CharField(max_length=500, blank=True, default="")
    # Scopes a server asked for (403 insufficient_scope) that only the person can grant: the
    # next connect asks for these as well as ``scopes`` (space-separated).
    wanted_scopes = models.CharField(max_length=2000, blank=True, default="")
    version = models.PositiveIntegerField(default=0)
    connected_at = models.DateTimeField(default=timezone.now)
    last_refresh_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["connection", "user"],
                condition=Q(user__isnull=False),
                name="oauth_authorization_one_per_person",
            ),
            models.UniqueConstraint(
                fields=["connection"],
                condition=Q(user__isnull=True),
                name="oauth_authorization_one_per_connection",
            ),
        ]

    def __str__(self) -> str:
        who = self.user or "the connection"
        return f"{who} on {self.connection}"

    @property
    def scope_list(self) -> list[str]:
        return self.scopes.split()


class PendingAuthorization(models.Model):
    """An authorization request on its way through a person's browser.

    Only a digest of ``state`` is stored, and the row is bound to the person and to their
    session, so a replayed, foreign or stale ``state`` finds nothing.
    """

    state_digest = models.CharField(max_length=64, unique=True)
    session_digest = models.CharField(max_length=64)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    connection = models.ForeignKey(Connection, on_delete=models.CASCADE, related_name="+")
    # An authorization's kind, or "held": a start form's draft kept while its person connects.
    kind = models.CharField(
        max_length=32,
        choices=[
            *Authorization.Kind.choices,
            ("held", "a start form kept while its person connects"),
        ],
    )
    # mrtrweb.oauth.AuthorizationRequest.to_json() (the PKCE verifier among it), encrypted.
    request = EncryptedJSONField()
    # Where the person goes afterwards: a local path, checked when it is stored and when used.
    return_to = models.CharField(max_length=2000, blank=True, default="")
    # What the person had typed on the page that sent them (a start form's fields), if any.
    draft = EncryptedJSONField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"pending: {self.user} on {self.connection}"
