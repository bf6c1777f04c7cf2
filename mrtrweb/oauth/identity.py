"""Who the client is at an authorization server, in the spec's order of preference.

1. A client ID metadata document: the client ID is an HTTPS URL where the client publishes
   its metadata; used when the server says ``client_id_metadata_document_supported``.
2. Credentials an operator registered with that server beforehand.
3. Dynamic client registration (RFC 7591), deprecated by the spec but still common.

A client identity belongs to one issuer: a server that moves to another authorization server
gets a new registration, never the old server's client ID or secret.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import httpx

from .discovery import Discovery
from .errors import DiscoveryError
from .fetch import post_json

__all__ = [
    "GRANT_TYPES",
    "ClientIdentity",
    "RegisteredVia",
    "choose_auth_method",
    "client_metadata_document",
    "identify",
]

RegisteredVia = Literal["metadata-document", "pre-registered", "dynamic", "client-credentials"]

# refresh_token among the grant types: SEP-2207 (a client that wants refresh tokens says so).
GRANT_TYPES = ["authorization_code", "refresh_token"]

# Methods this client can use, preferred first when it holds a secret.
_WITH_SECRET = ("client_secret_basic", "client_secret_post")


@dataclass(frozen=True)
class ClientIdentity:
    issuer: str
    client_id: str
    client_secret: str | None = field(repr=False)  # never in a log line or an error
    token_endpoint_auth_method: str
    registered_via: str

    def to_json(self) -> dict[str, Any]:
        """Everything but the secret, which the caller stores encrypted on its own."""
        return {
            "issuer": self.issuer,
            "client_id": self.client_id,
            "token_endpoint_auth_method": self.token_endpoint_auth_method,
            "registered_via": self.registered_via,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any], client_secret: str | None = None) -> ClientIdentity:
        return cls(
            issuer=data["issuer"],
            client_id=data["client_id"],
            client_secret=client_secret if client_secret is not None else data.get("client_secret"),
            token_endpoint_auth_method=data.get("token_endpoint_auth_method") or "none",
            registered_via=data.get("registered_via") or "pre-registered",
        )


def choose_auth_method(
    offered: tuple[str, ...], *, has_secret: bool, wanted: str | None = None
) -> str:
    """The token endpoint authentication method to use: ``wanted`` when offered, else the
    first offered that fits (a secret: basic, then post; none without one)."""
    if wanted and wanted in offered:
        return wanted
    if has_secret:
        for method in _WITH_SECRET:
            if method in offered:
                return method
    if "none" in offered:
        return "none"
    if wanted:
        return wanted
    raise DiscoveryError(
        f"The authorization server offers only {', '.join(offered) or 'no'} client "
        "authentication at its token endpoint, none of which this client can use"
    )


def client_metadata_document(
    client_id_url: str,
    *,
    redirect_uris: list[str],
    client_name: str,
    client_uri: str | None = None,
    application_type: str = "web",
) -> dict[str, Any]:
    """The client ID metadata document to serve at ``client_id_url`` (a public client:
    PKCE protects its codes, there is no secret to publish)."""
    document: dict[str, Any] = {
        "client_id": client_id_url,
        "client_name": client_name,
        "redirect_uris": list(redirect_uris),
        "grant_types": list(GRANT_TYPES),
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        "application_type": application_type,
    }
    if client_uri:
        document["client_uri"] = client_uri
    return document


async def _register(
    http: httpx.AsyncClient,
    discovery: Discovery,
    *,
    redirect_uri: str,
    client_name: str,
    application_type: str,
) -> ClientIdentity:
    endpoint = discovery.registration_endpoint
    if endpoint is None:
        raise DiscoveryError(
            f"The authorization server {discovery.issuer} accepts no client ID metadata "
            "document and has no registration endpoint, and no client credentials were "
            "registered for it: ask its operator for a client ID"
        )
    method = choose_auth_method(discovery.auth_methods, has_secret=True)
    answer = await post_json(
        http,
        endpoint,
        {
            "client_name": client_name,
            "redirect_uris": [redirect_uri],
            "grant_types": GRANT_TYPES,
            "response_types": ["code"],
            "token_endpoint_auth_method": method,
            "application_type": application_type,
        },
    )
    body = answer.body or {}
    client_id = body.get("client_id")
    if answer.http_status not in (200, 201) or not isinstance(client_id, str) or not client_id:
        detail = body.get("error_description") or body.get("error") or ""
        raise DiscoveryError(
            f"Dynamic client registration at {endpoint} failed "
            f"(HTTP {answer.http_status}) {detail}".strip()
        )
    secret = body.get("client_secret") if isinstance(body.get("client_secret"), str) else None
    granted = body.get("token_endpoint_auth_method")
    return ClientIdentity(
        issuer=discovery.issuer,
        client_id=client_id,
        client_secret=secret,
        token_endpoint_auth_method=granted if isinstance(granted, str) and granted else method,
        registered_via="dynamic",
    )


async def identify(
    http: httpx.AsyncClient,
    discovery: Discovery,
    *,
    redirect_uri: str,
    client_name: str,
    metadata_document_url: str | None = None,
    preregistered: ClientIdentity | None = None,
    known: ClientIdentity | None = None,
    application_type: str = "web",
) -> ClientIdentity:
    """The client identity to use with ``discovery.issuer``, registering if need be.

    ``known`` (an identity kept from before) is reused only when it belongs to this issuer;
    ``preregistered`` likewise. ``application_type`` is ``"web"`` for the web app and
    ``"native"`` for a command on a person's machine (SEP-837).
    """
    if known is not None and known.issuer == discovery.issuer:
        return known
    supports_documents = discovery.server_metadata.get("client_id_metadata_document_supported")
    if metadata_document_url and supports_documents is True:
        return ClientIdentity(
            issuer=discovery.issuer,
            client_id=metadata_document_url,
            client_secret=None,
            token_endpoint_auth_method="none",
            registered_via="metadata-document",
        )
    if preregistered is not None and preregistered.issuer in ("", discovery.issuer):
        return ClientIdentity(
            issuer=discovery.issuer,
            client_id=preregistered.client_id,
            client_secret=preregistered.client_secret,
            token_endpoint_auth_method=choose_auth_method(
                discovery.auth_methods,
                has_secret=bool(preregistered.client_secret),
                wanted=preregistered.token_endpoint_auth_method or None,
            ),
            registered_via="pre-registered",
        )
    return await _register(
        http,
        discovery,
        redirect_uri=redirect_uri,
        client_name=client_name,
        application_type=application_type,
    )
